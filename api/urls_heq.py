# Filled in by the feature that owns these routes.
urlpatterns = []
