"""The thin client's tests: a fake API per test."""

from __future__ import annotations

import pytest

from tests.support.fake_api import FakeApi


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()
