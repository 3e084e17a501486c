"""The input errors (models.errors.FieldError and its subclasses, UnknownNameError) survive pickling, so one raised
in a worker process (replica workers, a sweep's or a plan's pool, a Dask worker) reaches the caller as itself:
Exception's own reduce re-called the class with the one formatted text, a TypeError (missing `message`) in place
of the error."""
from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from models.errors import FieldError, UnknownNameError
from profiles.measured.source import MeasuredDataError
from simulator.errors import ScenarioError
from simulator.speculation.published import RegistryError

ERRORS = [FieldError("cluster.dtype", "fp8 needs FP8 tensor cores", "fp8, the checkpoint's quantization_config"),
          ScenarioError("workload.num_requests", "an integer from 1"), MeasuredDataError("cluster.latency", "none"),
          RegistryError("acceptance.entry", "no row"), UnknownNameError("model", "llama-9", ["a", "b"], "or a path")]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_input_error_pickles_to_an_equal_error(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    for name in ("field", "message", "implied", "what", "name"):
        assert getattr(back, name, None) == getattr(error, name, None)


def _raise(error):
    raise error


def test_an_input_error_raised_in_a_worker_process_reaches_the_caller():
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(ScenarioError) as caught:
            pool.submit(_raise, ERRORS[1]).result()
    assert caught.value.field == "workload.num_requests" and str(caught.value) == str(ERRORS[1])
