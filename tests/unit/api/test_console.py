"""api/routes/console.py: the console's page and assets come from the API process and hold no data."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from clawbus.api.routes.console import CONSOLE


def test_the_page_needs_no_token_and_links_flower_on_its_configured_port(http: TestClient) -> None:
    http.headers.pop("Authorization")
    page = http.get("/console")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    assert 'data-flower-port="5555"' in page.text


def test_every_asset_the_page_loads_is_served(http: TestClient) -> None:
    http.headers.pop("Authorization")
    page = http.get("/console").text
    wanted = re.findall(r'(?:href|src)="(/console/assets/[^"]+)"', page)
    wanted += re.findall(r'"(/console/assets/vendor/[^"]+)"', page)  # the import map
    assert len(set(wanted)) == 7
    for path in set(wanted):
        assert http.get(path).status_code == 200, path


def test_every_module_the_app_imports_is_there() -> None:
    for script in CONSOLE.glob("*.js"):
        for name in re.findall(r'from "\./([^"]+)"', script.read_text()):
            assert (CONSOLE / name).is_file(), f"{script.name} imports {name}"


def test_a_slash_after_console_goes_to_the_page(http: TestClient) -> None:
    response = http.get("/console/", follow_redirects=False)
    assert response.status_code in (307, 308)
    assert response.headers["location"] == "/console"
