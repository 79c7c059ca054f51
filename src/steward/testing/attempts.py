"""A start command for tests of the logic around one (slots, reports, work directories):
it names a job graph blob that need not exist, with a placeholder hash."""

from __future__ import annotations

from steward.wire.heartbeat import StartAttempt


def start_attempt(job_id: str, attempt: int = 1, epoch: int = 1) -> StartAttempt:
    """Start ``attempt`` of ``job_id`` at ``epoch``; its graph and checkpoints are the job's
    own made-up paths."""
    return StartAttempt(
        job_id=job_id,
        attempt=attempt,
        epoch=epoch,
        job_graph_blob=f"jobgraphs/{job_id}/x",
        job_graph_sha256="0" * 64,
        checkpoint_dir=f"/tmp/ck/{job_id}",
    )
