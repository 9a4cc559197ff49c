"""deploy/: the Kubernetes manifests, checked offline (no cluster): ``kubectl kustomize`` renders the base
and every overlay (kubectl must be on PATH; it ships kustomize), and what comes out is validated.

Core kinds are validated with kubernetes-validate in strict mode (unknown fields are errors), the KEDA
ScaledObject against deploy/schemas/keda-scaledobject.schema.json.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import json5
import jsonschema
import kubernetes_validate
import pytest
import yaml

from clawbus.api.cli import app
from clawbus.shared.config import Config
from clawbus.workers import queues

Doc = dict[str, Any]

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BASE = DEPLOY / "base"
KEDA = DEPLOY / "components" / "keda"
OVERLAY = DEPLOY / "overlays" / "example"
SENTINEL_COMPONENT = DEPLOY / "components" / "redis-sentinel"
SENTINEL_OVERLAY = DEPLOY / "overlays" / "sentinel"
SCHEMA = DEPLOY / "schemas" / "keda-scaledobject.schema.json"
KUSTOMIZATION = "kustomization.yaml"

# A Kubernetes version kubernetes-validate ships schemas for (it has every minor up to its latest).
K8S_VERSION = "1.33"
ROLES = ("api", "worker", "beat", "flower")
WORK_QUEUES = {"runs", "nested", "subagent", "delivery"}
IMAGE_USER = 10001


# --- loading -------------------------------------------------------------------------------------------


def load_docs(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


def kustomization(directory: Path) -> Doc:
    docs = load_docs(directory / KUSTOMIZATION)
    assert len(docs) == 1
    result: Doc = docs[0]
    return result


def kustomization_dirs() -> list[Path]:
    return sorted(path.parent for path in DEPLOY.rglob(KUSTOMIZATION))


def patch_files() -> set[Path]:
    return {
        (directory / entry["path"]).resolve()
        for directory in kustomization_dirs()
        for entry in kustomization(directory).get("patches", [])
        if "path" in entry
    }


def manifest_files() -> list[Path]:
    """Every YAML file under deploy/ that holds whole resources (not a kustomization, not a patch)."""
    patches = patch_files()
    return [
        path
        for path in sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])
        if path.name != KUSTOMIZATION and path.resolve() not in patches
    ]


def is_keda(doc: Doc) -> bool:
    return str(doc["apiVersion"]).startswith("keda.sh/")


def source_documents() -> list[tuple[str, Doc]]:
    return [
        (f"{path.relative_to(DEPLOY)}:{doc['kind']}/{doc['metadata']['name']}", doc)
        for path in manifest_files()
        for doc in load_docs(path)
    ]


# --- rendering, with the real kustomize ------------------------------------------------------------------


def render(directory: Path) -> list[Doc]:
    """``kubectl kustomize``: the real kustomize renders the directory, offline (no cluster is needed)."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed to render the kustomize overlays (it ships kustomize)"
    done = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"kustomize failed on {directory.relative_to(REPO)}:\n{done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


# --- views of rendered resources -----------------------------------------------------------------------


def pod_spec(doc: Doc) -> Doc | None:
    if doc["kind"] in ("Deployment", "StatefulSet"):
        spec: Doc = doc["spec"]["template"]["spec"]
        return spec
    return None


def all_containers(resources: list[Doc]) -> Iterator[Doc]:
    for doc in resources:
        spec = pod_spec(doc)
        if spec is not None:
            yield from spec.get("initContainers", [])
            yield from spec["containers"]


def component(doc: Doc) -> str:
    label: str = doc["metadata"]["labels"]["app.kubernetes.io/component"]
    return label


def one(resources: list[Doc], kind: str, role: str) -> Doc:
    found = [doc for doc in resources if doc["kind"] == kind and component(doc) == role]
    assert len(found) == 1, f"expected one {kind} for {role}, found {len(found)}"
    return found[0]


def container(resources: list[Doc], role: str) -> Doc:
    kind = "StatefulSet" if role == "redis" else "Deployment"
    containers: list[Doc] = one(resources, kind, role)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def env(container_: Doc) -> dict[str, Doc]:
    return {item["name"]: item for item in container_.get("env", [])}


def port_number(container_: Doc, port: int | str) -> int:
    if isinstance(port, int):
        return port
    numbers = [p["containerPort"] for p in container_.get("ports", []) if p.get("name") == port]
    assert numbers, f"no container port named {port}"
    number: int = numbers[0]
    return number


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def cli_commands() -> set[str]:
    return {
        command.name or (command.callback.__name__ if command.callback else "")
        for command in app.registered_commands
    }


def keda_schema() -> Doc:
    schema: Doc = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return schema


def clawbus_config(resources: list[Doc]) -> Config:
    config_map = one(resources, "ConfigMap", "config")
    return Config.model_validate(json5.loads(config_map["data"]["clawbus.json5"]))


@pytest.fixture(scope="module")
def base() -> list[Doc]:
    return render(BASE)


@pytest.fixture(scope="module")
def overlay() -> list[Doc]:
    return render(OVERLAY)


@pytest.fixture(scope="module", params=["base", "overlay"])
def rendered(request: pytest.FixtureRequest, base: list[Doc], overlay: list[Doc]) -> list[Doc]:
    return base if request.param == "base" else overlay


# --- the files themselves ------------------------------------------------------------------------------


SOURCE_DOCUMENTS = source_documents()
CORE_DOCUMENTS = [(name, doc) for name, doc in SOURCE_DOCUMENTS if not is_keda(doc)]
KEDA_DOCUMENTS = [(name, doc) for name, doc in SOURCE_DOCUMENTS if is_keda(doc)]


def test_deploy_holds_the_base_the_keda_component_the_overlay_and_the_schema() -> None:
    assert kustomization_dirs() == [BASE, KEDA, SENTINEL_COMPONENT, OVERLAY, SENTINEL_OVERLAY]
    assert SCHEMA.is_file()
    assert (DEPLOY / "README.md").is_file()
    assert len(CORE_DOCUMENTS) >= 12
    assert [doc["kind"] for _, doc in KEDA_DOCUMENTS] == ["ScaledObject"]


@pytest.mark.parametrize(("name", "doc"), CORE_DOCUMENTS, ids=[name for name, _ in CORE_DOCUMENTS])
def test_every_core_manifest_is_valid_kubernetes_in_strict_mode(name: str, doc: Doc) -> None:
    assert kubernetes_validate.validate(doc, K8S_VERSION, strict=True) == K8S_VERSION


@pytest.mark.parametrize(("name", "doc"), KEDA_DOCUMENTS, ids=[name for name, _ in KEDA_DOCUMENTS])
def test_the_scaled_object_is_valid_against_the_keda_schema(name: str, doc: Doc) -> None:
    schema = keda_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert doc["spec"]["minReplicaCount"] <= doc["spec"]["maxReplicaCount"]


def _unknown_spec_field(doc: Doc) -> None:
    doc["spec"]["replicas"] = 3


def _numeric_trigger_metadata(doc: Doc) -> None:
    doc["spec"]["triggers"][0]["metadata"]["listLength"] = 4


def _unknown_trigger_field(doc: Doc) -> None:
    doc["spec"]["triggers"][0]["address"] = "redis:6379"


def _no_target_name(doc: Doc) -> None:
    del doc["spec"]["scaleTargetRef"]["name"]


def _negative_max_replicas(doc: Doc) -> None:
    doc["spec"]["maxReplicaCount"] = -1


def _wrong_api_version(doc: Doc) -> None:
    doc["apiVersion"] = "keda.k8s.io/v1alpha1"


def _no_name(doc: Doc) -> None:
    del doc["metadata"]["name"]


@pytest.mark.parametrize(
    "break_it",
    [
        _unknown_spec_field,
        _numeric_trigger_metadata,
        _unknown_trigger_field,
        _no_target_name,
        _negative_max_replicas,
        _wrong_api_version,
        _no_name,
    ],
)
def test_the_keda_schema_rejects_what_keda_would_reject(break_it: Any) -> None:
    [(_, doc)] = KEDA_DOCUMENTS
    broken = copy.deepcopy(doc)
    break_it(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(keda_schema()).validate(broken)


def test_strict_validation_rejects_an_unknown_field() -> None:
    # The check above would be worthless if strict mode let a misspelt field through.
    [(_, doc)] = [(n, d) for n, d in CORE_DOCUMENTS if d["kind"] == "Deployment" and component(d) == "worker"]
    broken = copy.deepcopy(doc)
    broken["spec"]["template"]["spec"]["terminationGracePeriod"] = 600
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_every_kustomization_path_exists() -> None:
    for directory in kustomization_dirs():
        spec = kustomization(directory)
        paths = [*spec.get("resources", []), *spec.get("components", [])]
        paths += [entry["path"] for entry in spec.get("patches", []) if "path" in entry]
        paths += [file for gen in spec.get("configMapGenerator", []) for file in gen["files"]]
        assert paths, directory
        for entry in paths:
            path = (directory / entry).resolve()
            assert path.exists(), f"{directory.relative_to(DEPLOY)}: {entry} does not exist"
            if path.is_dir():
                assert (path / KUSTOMIZATION).is_file(), f"{entry} is a directory without a kustomization"


def test_every_rendered_resource_is_valid(rendered: list[Doc]) -> None:
    resources = rendered
    for doc in resources:
        if is_keda(doc):
            jsonschema.Draft202012Validator(keda_schema()).validate(doc)
        else:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    names = [(doc["kind"], doc["metadata"]["name"]) for doc in resources]
    assert len(names) == len(set(names)), "two resources of the same kind and name"


# --- roles ---------------------------------------------------------------------------------------------


def test_every_resource_carries_the_clawbus_labels(rendered: list[Doc]) -> None:
    for doc in rendered:
        labels = doc["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "clawbus", doc["metadata"]["name"]
        assert labels["app.kubernetes.io/component"], doc["metadata"]["name"]
        spec = pod_spec(doc)
        if spec is not None:
            assert doc["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] == component(
                doc
            )


def test_each_role_has_its_workload(rendered: list[Doc]) -> None:
    for role in ROLES:
        assert one(rendered, "Deployment", role)["metadata"]["name"] == f"clawbus-{role}"
    assert one(rendered, "StatefulSet", "redis")["metadata"]["name"] == "redis"
    assert {component(doc) for doc in rendered if doc["kind"] == "Service"} == {"api", "flower", "redis"}


def test_every_clawbus_container_runs_its_cli_role(rendered: list[Doc]) -> None:
    commands = cli_commands()
    for role in ROLES:
        command = container(rendered, role)["command"]
        assert command[:2] == ["clawbus", role]
        assert role in commands
    assert "probe" in commands


def test_every_workload_selector_matches_its_pod_template_labels(rendered: list[Doc]) -> None:
    workloads = [doc for doc in rendered if pod_spec(doc) is not None]
    assert len(workloads) == 5
    for doc in workloads:
        selector = doc["spec"]["selector"]["matchLabels"]
        assert selector["app.kubernetes.io/component"] == component(doc)
        assert selects(selector, doc["spec"]["template"]["metadata"]["labels"])
        for other in workloads:
            if other is not doc:  # no workload's selector claims another's pods
                assert not selects(selector, other["spec"]["template"]["metadata"]["labels"])


def test_every_service_and_budget_selects_the_pods_of_one_workload(rendered: list[Doc]) -> None:
    templates = [doc for doc in rendered if pod_spec(doc) is not None]
    for doc in rendered:
        if doc["kind"] not in ("Service", "PodDisruptionBudget"):
            continue
        selector = doc["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        chosen = [t for t in templates if selects(selector, t["spec"]["template"]["metadata"]["labels"])]
        assert [component(t) for t in chosen] == [component(doc)], doc["metadata"]["name"]
        if doc["kind"] == "Service":
            [pod] = chosen
            [target] = pod["spec"]["template"]["spec"]["containers"]
            for port in doc["spec"]["ports"]:
                assert port_number(target, port["targetPort"]) == port["port"]


def test_budgets_protect_api_worker_and_redis(rendered: list[Doc]) -> None:
    budgets = {component(doc): doc["spec"] for doc in rendered if doc["kind"] == "PodDisruptionBudget"}
    assert set(budgets) >= {"api", "worker", "redis"}
    assert budgets["api"]["minAvailable"] == 1
    assert one(rendered, "Deployment", "api")["spec"]["replicas"] > budgets["api"]["minAvailable"]
    assert budgets["worker"]["maxUnavailable"] == 1
    assert budgets["redis"]["maxUnavailable"] == 0


def test_beat_is_exactly_one_replica_and_never_overlaps(rendered: list[Doc]) -> None:
    beat = one(rendered, "Deployment", "beat")
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    autoscaled = [doc["spec"]["scaleTargetRef"]["name"] for doc in rendered if doc["kind"] == "ScaledObject"]
    assert beat["metadata"]["name"] not in autoscaled


def test_beat_liveness_asks_whether_the_reaper_ran(rendered: list[Doc]) -> None:
    beat = container(rendered, "beat")
    assert beat["livenessProbe"]["exec"]["command"] == ["clawbus", "probe", "beat"]
    assert beat["command"] == ["clawbus", "beat", "--schedule", "/var/lib/clawbus/celerybeat-schedule"]
    mounts = {m["mountPath"] for m in beat["volumeMounts"]}
    assert "/var/lib/clawbus" in mounts  # the schedule file is written there, on a writable volume


def test_worker_finishes_its_current_run_before_it_is_killed(rendered: list[Doc]) -> None:
    worker = one(rendered, "Deployment", "worker")
    grace = worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 600
    assert clawbus_config(rendered).agents.defaults.subagents.run_timeout_seconds < grace
    probe = container(rendered, "worker")["livenessProbe"]
    assert probe["exec"]["command"] == ["clawbus", "probe", "worker"]
    assert "terminationGracePeriodSeconds" not in probe  # a liveness kill drains too
    assert not any(doc["kind"] == "Service" and component(doc) == "worker" for doc in rendered)


def test_api_is_ready_when_it_reaches_redis_and_alive_on_healthz(rendered: list[Doc]) -> None:
    api = container(rendered, "api")
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in (api["readinessProbe"], api["livenessProbe"]):
        assert port_number(api, probe["httpGet"]["port"]) == 8787
    assert api["command"] == ["clawbus", "api", "--host", "0.0.0.0"]
    assert one(rendered, "Deployment", "api")["spec"]["replicas"] == 2
    # The drain (10 s) and the preStop pause fit in the grace period.
    grace = one(rendered, "Deployment", "api")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= 10 + int(api["lifecycle"]["preStop"]["exec"]["command"][1]) + 5


def test_flower_probes_its_healthcheck_and_takes_basic_auth_from_the_secret(rendered: list[Doc]) -> None:
    flower = container(rendered, "flower")
    for probe in (flower["readinessProbe"], flower["livenessProbe"]):
        assert probe["httpGet"]["path"] == "/healthcheck"
        assert port_number(flower, probe["httpGet"]["port"]) == 5555
    auth = env(flower)["FLOWER_BASIC_AUTH"]
    assert "value" not in auth
    assert auth["valueFrom"]["secretKeyRef"] == {"name": "clawbus-secrets", "key": "FLOWER_BASIC_AUTH"}
    assert one(rendered, "Deployment", "flower")["spec"]["replicas"] == 1


def test_every_container_requests_cpu_and_memory_and_caps_memory(rendered: list[Doc]) -> None:
    containers = list(all_containers(rendered))
    assert len(containers) == 5
    for item in containers:
        assert set(item["resources"]["requests"]) >= {"cpu", "memory"}, item["name"]
        assert "memory" in item["resources"]["limits"], item["name"]


def test_clawbus_containers_run_as_the_image_user_never_root(rendered: list[Doc]) -> None:
    for role in ROLES:
        pod = one(rendered, "Deployment", role)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == IMAGE_USER
        assert pod["automountServiceAccountToken"] is False
        security = container(rendered, role)["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]


def test_every_clawbus_container_reads_the_mounted_config_and_the_redis_service(rendered: list[Doc]) -> None:
    config_map = one(rendered, "ConfigMap", "config")
    redis = one(rendered, "Service", "redis")
    for role in ROLES:
        item = container(rendered, role)
        variables = env(item)
        config_path = Path(variables["CLAWBUS_CONFIG"]["value"])
        assert config_path.name in config_map["data"]
        volumes = {
            v["name"]: v for v in one(rendered, "Deployment", role)["spec"]["template"]["spec"]["volumes"]
        }
        [mount] = [m for m in item["volumeMounts"] if m["mountPath"] == str(config_path.parent)]
        assert volumes[mount["name"]]["configMap"]["name"] == config_map["metadata"]["name"]
        assert variables["CLAWBUS_HOME"]["value"] == "/var/lib/clawbus"
        url = urlsplit(variables["CLAWBUS_REDIS_URL"]["value"])
        assert (url.scheme, url.hostname, url.port, url.path) == ("redis", "redis", 6379, "/0")
        assert url.hostname == redis["metadata"]["name"]
        assert url.port in [port["port"] for port in redis["spec"]["ports"]]


def test_the_config_map_holds_a_valid_clawbus_config(base: list[Doc]) -> None:
    config = clawbus_config(base)
    agents = {agent.id: agent for agent in config.agents.entries}
    assert set(agents) == {"main", "research"}
    assert agents["main"].default
    assert config.gateway.port == 8787
    assert config.flower.port == 5555


def test_only_the_api_and_flower_get_secrets_and_the_secret_has_their_keys(base: list[Doc]) -> None:
    [secret] = [doc for doc in base if doc["kind"] == "Secret"]
    for role in ROLES:
        refs = {
            item["valueFrom"]["secretKeyRef"]["key"]
            for item in env(container(base, role)).values()
            if "secretKeyRef" in item.get("valueFrom", {})
        }
        assert refs == {"api": {"CLAWBUS_API_TOKENS"}, "flower": {"FLOWER_BASIC_AUTH"}}.get(role, set())
        assert refs <= set(secret["stringData"])
    # The base's values are placeholders, marked as such.
    assert all(value.startswith("REPLACE-ME") for value in secret["stringData"].values())


def test_redis_keeps_an_append_only_file_on_a_persistent_volume_and_never_evicts(
    rendered: list[Doc],
) -> None:
    statefulset = one(rendered, "StatefulSet", "redis")
    assert statefulset["spec"]["replicas"] == 1
    assert statefulset["spec"]["serviceName"] == "redis"
    redis = container(rendered, "redis")
    assert redis["image"] == "redis:7"
    command = redis["command"]
    flags = dict(zip(command[1::2], command[2::2], strict=True))
    assert command[0] == "redis-server"
    assert flags["--appendonly"] == "yes"
    assert flags["--appendfsync"] == "everysec"
    assert flags["--maxmemory-policy"] == "noeviction"
    [claim] = statefulset["spec"]["volumeClaimTemplates"]
    [data] = [m for m in redis["volumeMounts"] if m["name"] == claim["metadata"]["name"]]
    assert data["mountPath"] == flags["--dir"]
    assert "redis-cli ping" in " ".join(redis["readinessProbe"]["exec"]["command"])
    assert redis["livenessProbe"]["exec"]["command"] == ["redis-cli", "ping"]
    assert redis["securityContext"]["allowPrivilegeEscalation"] is False
    assert statefulset["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


# --- autoscaling and the overlay -----------------------------------------------------------------------


def test_the_scaled_object_scales_the_worker_on_each_work_queue(overlay: list[Doc]) -> None:
    [scaled] = [doc for doc in overlay if doc["kind"] == "ScaledObject"]
    worker = one(overlay, "Deployment", "worker")
    target = scaled["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"], target["name"]) == (
        worker["apiVersion"],
        "Deployment",
        worker["metadata"]["name"],
    )
    assert scaled["metadata"]["namespace"] == worker["metadata"]["namespace"]
    assert set(queues.ALL) - {queues.MAINTENANCE} == WORK_QUEUES
    triggers = scaled["spec"]["triggers"]
    assert all(trigger["type"] == "redis" for trigger in triggers)
    assert sorted(trigger["metadata"]["listName"] for trigger in triggers) == sorted(WORK_QUEUES)
    namespace = worker["metadata"]["namespace"]
    for trigger in triggers:
        meta = trigger["metadata"]
        assert int(meta["listLength"]) > 0
        assert meta["databaseIndex"] == "0"  # the db of CLAWBUS_REDIS_URL
        # The KEDA operator resolves the address from its own namespace: it must name this one.
        assert meta["address"] == f"redis.{namespace}.svc:6379"
    # Never to zero: the reaper runs on a worker. The overlay raised the ceiling.
    assert scaled["spec"]["minReplicaCount"] == 1
    assert scaled["spec"]["maxReplicaCount"] == 40
    assert scaled["spec"]["cooldownPeriod"] > 0


def test_with_keda_the_autoscaler_owns_the_worker_replica_count(base: list[Doc], overlay: list[Doc]) -> None:
    assert one(base, "Deployment", "worker")["spec"]["replicas"] == 2
    assert "replicas" not in one(overlay, "Deployment", "worker")["spec"]
    assert not any(doc["kind"] == "ScaledObject" for doc in base)  # the base runs without KEDA's CRDs


def test_the_example_overlay_pins_image_namespace_and_bigger_workers(overlay: list[Doc]) -> None:
    for item in all_containers(overlay):
        if item["name"] != "redis":
            assert item["image"] == "registry.example.com/clawbus:0.1.0"
    [namespace] = [doc for doc in overlay if doc["kind"] == "Namespace"]
    assert {doc["metadata"].get("namespace") for doc in overlay if doc is not namespace} == {
        namespace["metadata"]["name"]
    }
    worker = container(overlay, "worker")
    assert worker["args"] == ["--pool", "threads", "--concurrency", "200"]
    assert worker["livenessProbe"]["exec"]["command"] == ["clawbus", "probe", "worker"]  # merged, not lost
    [claim] = one(overlay, "StatefulSet", "redis")["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "50Gi"


def test_the_example_overlay_ships_no_placeholder_secret(overlay: list[Doc]) -> None:
    assert not any(doc["kind"] == "Secret" for doc in overlay)
    assert "REPLACE-ME" not in yaml.safe_dump_all(overlay)


# --- Redis under Sentinel ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sentinel_overlay() -> list[Doc]:
    return render(SENTINEL_OVERLAY)


def test_the_sentinel_overlay_renders_valid_resources_with_the_clawbus_labels(
    sentinel_overlay: list[Doc],
) -> None:
    for doc in sentinel_overlay:
        if not is_keda(doc):
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "clawbus", doc["metadata"]["name"]


def test_two_redis_pods_and_three_sentinels_with_room_to_drain_one_of_each(
    sentinel_overlay: list[Doc],
) -> None:
    redis = one(sentinel_overlay, "StatefulSet", "redis")
    sentinels = one(sentinel_overlay, "StatefulSet", "redis-sentinel")
    assert (redis["spec"]["replicas"], sentinels["spec"]["replicas"]) == (2, 3)
    assert redis["spec"]["template"]["spec"]["containers"][0]["command"] == ["sh", "/scripts/redis.sh"]
    for name in ("redis", "redis-sentinel"):
        budget = one(sentinel_overlay, "PodDisruptionBudget", name)
        assert budget["spec"]["maxUnavailable"] == 1
    service = one(sentinel_overlay, "Service", "redis-sentinel")
    assert service["spec"]["ports"][0]["port"] == 26379
    assert selects(service["spec"]["selector"], sentinels["spec"]["template"]["metadata"]["labels"])


def test_every_role_is_pointed_at_the_three_sentinels_and_the_config_accepts_them(
    sentinel_overlay: list[Doc],
) -> None:
    for role in ROLES:
        env = {e["name"]: e.get("value") for e in container(sentinel_overlay, role)["env"]}
        hosts = env["CLAWBUS_REDIS_SENTINELS"]
        assert [h.split(".")[0] for h in hosts.split(",")] == [f"redis-sentinel-{i}" for i in range(3)]
        redis = Config.model_validate(
            {"redis": {"sentinels": hosts, "sentinelMaster": env["CLAWBUS_REDIS_SENTINEL_MASTER"]}}
        ).redis
        assert redis.sentinel is not None
        assert redis.sentinel.master == "clawbus"
        assert len(redis.sentinel.addresses()) == 3


def test_the_scripts_are_valid_shell_and_watch_the_master_the_roles_ask_for() -> None:
    for script in ("redis.sh", "sentinel.sh"):
        path = SENTINEL_COMPONENT / script
        assert subprocess.run(["sh", "-n", str(path)], check=False).returncode == 0, script
        assert "get-master-addr-by-name clawbus" in path.read_text()
    assert "sentinel monitor clawbus $MASTER 6379 2" in (SENTINEL_COMPONENT / "sentinel.sh").read_text()
