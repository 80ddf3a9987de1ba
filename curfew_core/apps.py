from django.apps import AppConfig


class CurfewCoreConfig(AppConfig):
    name = "curfew_core"
    verbose_name = "Curfew"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Sign-out, password changes and deactivation close open capsule sockets.
        from curfew_core.realtime import signals

        signals.connect()
