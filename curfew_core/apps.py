from django.apps import AppConfig


class CurfewCoreConfig(AppConfig):
    name = "curfew_core"
    verbose_name = "Curfew"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, once the models are: Django's documented place for
        # connecting receivers (apps are loaded before any model exists).
        # ``checks`` registers Curfew's system checks by being imported.
        from curfew_core import checks  # noqa: F401
        from curfew_core.realtime import signals
        from curfew_core.services import cache_receivers, token_receivers
        from curfew_core.store import local_layer

        # A token changed outside the services (the admin, a cascade, a
        # deactivated user) stops working now, not at its cache's expiry.
        token_receivers.connect()
        # A row a verdict reads, saved or deleted by any channel (the admin, a
        # shell, a command, a cascade), is pushed to every process's cache.
        cache_receivers.connect()
        # A team key's member names, kept by each process beside its cache
        # layer: a name forgotten when any process forgets its entry (a member
        # left, joined or was renamed: ``cache_receivers``), all of them when
        # the layer's channel was lost.
        local_layer.on_drop("team-member:", _forget_member_names)
        # Sign-out, password changes and deactivation close open capsule sockets.
        signals.connect()


def _forget_member_names(keys: list[str] | None) -> None:
    from curfew_core.edge import team_caller

    team_caller.forget_names(keys)
