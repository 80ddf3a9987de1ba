from django.apps import AppConfig


class CurfewCoreConfig(AppConfig):
    name = "curfew_core"
    verbose_name = "Curfew"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, once the models are: Django's documented place for
        # connecting receivers (apps are loaded before any model exists).
        from curfew_core.realtime import signals
        from curfew_core.services import cache_receivers, token_receivers

        # A token changed outside the services (the admin, a cascade, a
        # deactivated user) stops working now, not at its cache's expiry.
        token_receivers.connect()
        # A row a verdict reads, saved or deleted by any channel (the admin, a
        # shell, a command, a cascade), is pushed to every process's cache.
        cache_receivers.connect()
        # Sign-out, password changes and deactivation close open capsule sockets.
        signals.connect()
