"""``StewardSubmitOperator``: runs a PySpark application as a Steward job, once per task
instance however often the task is retried.

Unless ``job_id`` is given, the job is named after the task instance
(:func:`steward_airflow.job_ids.task_job_id`) and the submission's bytes are deterministic
(:mod:`steward_airflow.submission`), so a try that follows one whose worker died finds the job
that try submitted: still running, it follows it; finished, it takes its result. A changed
spec under the same id is a task failure that says so (no retry can fix it).

Deferrable by default: once the job is accepted the task defers to :class:`StewardJobTrigger`
and frees its worker slot; ``deferrable=False`` follows the job in the task process. At the
end the job's outcome is in XCom (``return_value``: its result value; ``steward_job``: id,
state, attempts; ``log_tail``: the last lines of its latest attempt's log) and in the task's
log. ``on_kill`` (the task stopped by Airflow, not a dead worker) cancels the job; while the
task is deferred the trigger's ``on_kill`` does (:class:`StewardJobTrigger`).
``cancel_on_kill=False`` leaves the job running in both cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from steward_airflow import submission
from steward_airflow.api import TERMINAL, JobConflictError
from steward_airflow.events import follow
from steward_airflow.hooks.steward import StewardHook
from steward_airflow.job_ids import task_job_id
from steward_airflow.triggers.steward import StewardJobTrigger


class StewardSubmitOperator(BaseOperator):
    """Submit ``application`` (a .py file, a .zip or a folder) to Steward and wait for it.

    spark-submit's options: ``application_args``, ``py_files``, ``files``, ``archives``
    (``path#alias``), ``conf`` (Spark settings), ``name``. Steward's: ``requirements`` (pip
    lines, built into a venv on the TaskManager), ``labels``, ``restart`` (``"none"``,
    ``"fixed-delay"``, ``"exponential-delay"`` or Steward's JSON form), ``timeout`` (seconds
    or ``"2h"``, over all attempts), ``env`` (the driver's environment), ``slots``, ``job_id``,
    ``proxy_user`` (spark-submit's ``--proxy-user``: the OS user the driver runs as, granted to
    the connection's token by the cluster's ``security.proxy-users``).
    ``cancel_on_kill``: whether stopping the task from Airflow (mark failed or successful,
    clear, a task timeout) cancels the job, deferred or not.
    """

    template_fields: Sequence[str] = (
        "application",
        "application_args",
        "py_files",
        "files",
        "archives",
        "conf",
        "name",
        "labels",
        "env",
        "job_id",
    )
    ui_color = "#e8f0fe"

    def __init__(
        self,
        *,
        application: str,
        application_args: Sequence[Any] | None = None,
        py_files: Sequence[str] | None = None,
        files: Sequence[str] | None = None,
        archives: Sequence[str] | None = None,
        requirements: Sequence[str] | None = None,
        conf: Mapping[str, Any] | None = None,
        name: str | None = None,
        labels: Mapping[str, str] | None = None,
        restart: str | Mapping[str, Any] | None = None,
        timeout: float | str | None = None,
        env: Mapping[str, str] | None = None,
        slots: int | None = None,
        job_id: str | None = None,
        proxy_user: str | None = None,
        steward_conn_id: str = StewardHook.default_conn_name,
        deferrable: bool = True,
        poll_interval: float = 5.0,
        log_tail_lines: int = 50,
        cancel_on_kill: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.application = application
        self.application_args = list(application_args or [])
        self.py_files = list(py_files or [])
        self.files = list(files or [])
        self.archives = list(archives or [])
        self.requirements = list(requirements or [])
        self.conf = dict(conf or {})
        self.name = name
        self.labels = dict(labels or {})
        self.restart = restart
        self.job_timeout = timeout
        self.env = dict(env or {})
        self.slots = slots
        self.job_id = job_id
        self.proxy_user = proxy_user
        self.steward_conn_id = steward_conn_id
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.log_tail_lines = log_tail_lines
        self.cancel_on_kill = cancel_on_kill
        self._submitted: str | None = None

    def execute(self, context: Any) -> Any:
        prepared = self._submission(context)
        hook = StewardHook(self.steward_conn_id)
        try:
            view, how = hook.run(lambda api: api.submit(prepared))
        except JobConflictError as exc:
            raise AirflowFailException(str(exc)) from None
        self._submitted = prepared.job_id
        self.log.info(
            "steward job=%s %s state=%s attempts=%s",
            prepared.job_id,
            _HOW[how],
            view.get("state"),
            view.get("attempt_count"),
        )
        context["ti"].xcom_push(key="job_id", value=prepared.job_id)
        if view.get("state") not in TERMINAL:
            if self.deferrable:
                self.defer(
                    trigger=StewardJobTrigger(
                        job_id=prepared.job_id,
                        steward_conn_id=self.steward_conn_id,
                        poll_interval=self.poll_interval,
                        cancel_on_kill=self.cancel_on_kill,
                    ),
                    method_name="execute_complete",
                )
            view = hook.run(
                lambda api: follow(
                    api, prepared.job_id, poll=self.poll_interval, on_change=self._changed
                )
            )
        return self._finish(context, hook, view)

    def execute_complete(self, context: Any, event: Mapping[str, Any]) -> Any:
        """Resumed by the trigger: the job is terminal, or following it failed."""
        job_id = str(event["job_id"])
        if event.get("status") != "done":
            raise AirflowException(f"following Steward job {job_id} failed: {event.get('message')}")
        hook = StewardHook(self.steward_conn_id)
        return self._finish(context, hook, hook.run(lambda api: api.job(job_id)))

    def on_kill(self) -> None:
        job_id = self._submitted
        if job_id is None or not self.cancel_on_kill:
            return
        self.log.info("task killed: cancelling steward job=%s", job_id)
        StewardHook(self.steward_conn_id).run(lambda api: api.cancel(job_id))

    def _submission(self, context: Any) -> submission.Submission:
        ti = context["ti"]
        job_id = self.job_id or task_job_id(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)
        try:
            return submission.build(
                job_id=job_id,
                application=self.application,
                application_args=self.application_args,
                py_files=self.py_files,
                files=self.files,
                archives=self.archives,
                requirements=self.requirements,
                conf=self.conf,
                name=self.name or f"{ti.dag_id}.{ti.task_id}",
                labels=self.labels,
                restart=self.restart,
                timeout=self.job_timeout,
                env=self.env,
                slots=self.slots,
                proxy_user=self.proxy_user,
            )
        except submission.SubmissionError as exc:
            raise AirflowFailException(str(exc)) from None

    def _finish(self, context: Any, hook: StewardHook, view: Mapping[str, Any]) -> Any:
        job_id, state = str(view["job_id"]), view.get("state")
        attempts = [a["number"] for a in view.get("attempts") or []]
        tail = ""
        if attempts and self.log_tail_lines > 0:
            tail = hook.run(lambda api: api.log_tail(job_id, max(attempts), self.log_tail_lines))
        result = view.get("result") or {}
        ti = context["ti"]
        summary = {"job_id": job_id, "state": state, "attempts": len(attempts)}
        ti.xcom_push(key="steward_job", value=summary)
        ti.xcom_push(key="log_tail", value=tail)
        self.log.info(
            "steward job=%s state=%s attempts=%d log tail:\n%s", job_id, state, len(attempts), tail
        )
        if state != "FINISHED":
            error = result.get("error") or {}
            why = error.get("message") or view.get("reason") or "no reason given"
            raise AirflowException(f"Steward job {job_id} ended {state}: {why}")
        return result.get("value")

    def _changed(self, view: Mapping[str, Any]) -> None:
        self.log.info(
            "steward job=%s state=%s attempts=%s",
            view.get("job_id"),
            view.get("state"),
            view.get("attempt_count"),
        )


_HOW = {
    "submitted": "submitted",
    "attached": "attached to (an earlier try of this task submitted it)",
    "finished": "finished already (an earlier try of this task submitted it)",
}
