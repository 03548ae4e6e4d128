from django.urls import path

from annotation import views_phrase

urlpatterns = [
    path("p/<slug:slug>/coherence/", views_phrase.coherence_dashboard, name="phrase-coherence"),
]
