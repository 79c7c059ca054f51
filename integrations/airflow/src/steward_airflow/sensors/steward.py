"""``StewardJobSensor``: waits for a Steward job (submitted by any means) to finish."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException

from steward_airflow.hooks.steward import StewardHook


class StewardJobSensor(BaseSensorOperator):
    """True once job ``job_id`` is in ``target_states``; fails the task in ``failed_states``
    (by default: FAILED or CANCELED, which no waiting can change)."""

    template_fields: Sequence[str] = ("job_id",)

    def __init__(
        self,
        *,
        job_id: str,
        steward_conn_id: str = StewardHook.default_conn_name,
        target_states: Sequence[str] = ("FINISHED",),
        failed_states: Sequence[str] = ("FAILED", "CANCELED"),
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.job_id = job_id
        self.steward_conn_id = steward_conn_id
        self.target_states = tuple(target_states)
        self.failed_states = tuple(failed_states)

    def poke(self, context: Any) -> bool:
        view = StewardHook(self.steward_conn_id).run(lambda api: api.job(self.job_id))
        state = view.get("state")
        self.log.info("steward job=%s state=%s", self.job_id, state)
        if state in self.failed_states:
            raise AirflowException(f"Steward job {self.job_id} is {state}: {_reason(view)}")
        return state in self.target_states


def _reason(view: dict[str, Any]) -> str:
    error = (view.get("result") or {}).get("error") or {}
    return str(error.get("message") or view.get("reason") or "no reason given")
