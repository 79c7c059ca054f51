"""The leader's term, by responsibility: one module per thing the leader does.

:class:`~.dispatcher.Dispatcher` composes them for one term of leadership. ``term`` holds what
every part shares (epoch, fence, settings, the term's events, the clock), ``table`` the live
jobs under the one lock (and every change made to them, with ``slot_use`` the slots in use
it keeps current), ``stores`` the HA stores, ``context`` the four handed to each part; then
``recovery``, ``submissions``, ``initialization``, ``heartbeats``, ``membership``,
``scheduler``, ``records`` (status records and results), ``cleanup``, ``notifications`` and
``delivery`` (job webhooks, through the outbox), ``commands`` and ``views``. ``jobmaster`` is
one job's state machine (with ``jobmaster_values``, ``jobmaster_records`` and ``restart``),
``resources`` the live TaskManagers and their slots, ``content_gc`` the term's collector of
unreferenced files.
"""
