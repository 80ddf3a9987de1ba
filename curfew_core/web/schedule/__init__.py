"""The Overview (``/``) and the Schedule section (``/schedule/``): what your AI
does now and next, the schedule's form with its live preview, the override
buttons and the "Pretend it is ..." banner.

The settings form is shared: the Replies page is its other section
(``section.FormSection``), and the Team page edits a team's schedule with the
same form (``schedule_form``, ``forms``) and preview (``contexts``).
"""
