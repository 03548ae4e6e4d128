from django.urls import path

from . import pages

urlpatterns = [
    path("p/<slug:slug>/coherence/", pages.coherence_dashboard, name="phrase-coherence"),
]
