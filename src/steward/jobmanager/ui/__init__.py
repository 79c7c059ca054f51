"""The web UI every JobManager serves under ``/ui/`` (standbys too: it reads what the API reads).

Plain HTML, CSS and JavaScript modules in ``static/``, shipped inside the package: no build
step, nothing fetched from the internet. The pages call the REST API with the ``steward_token``
cookie that :mod:`.login` sets; :mod:`.pages` serves the files with a strict
Content-Security-Policy (no inline script, nothing from another origin).
"""
