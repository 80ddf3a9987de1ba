"""The Team page (``/team/``): the team's members now, its schedule, invites
and roles, what the curfew saved, and the audit. ``reads`` meets the team
layer's selectors, ``words`` says it, ``views`` are the doors."""
