"""Pages for people (settings page, sign-in). Filled in by the settings-page work."""

from django.urls import URLPattern, URLResolver

urlpatterns: list[URLPattern | URLResolver] = []
