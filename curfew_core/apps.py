from django.apps import AppConfig


class CurfewCoreConfig(AppConfig):
    name = "curfew_core"
    verbose_name = "Curfew"
    default_auto_field = "django.db.models.BigAutoField"
