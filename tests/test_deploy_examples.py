"""The deployment recipes of examples/deploy agree with the code: probe paths,
the health port, the stop grace above the drain, the exit statuses a process
manager must not restart on."""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

import yaml

from band_trio.observe import LIVEZ_PATH, READYZ_PATH
from band_trio.production import EXIT_BAD_CONFIG, EXIT_SUPERSEDED
from band_trio.runtime.config import AgentConfig

DEPLOY = Path(__file__).resolve().parent.parent / "examples" / "deploy"


def load(name: str) -> list[dict[str, Any]]:
    with open(DEPLOY / "kubernetes" / name, encoding="utf-8") as file:
        return [doc for doc in yaml.safe_load_all(file) if doc]


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", [])}


def config_from(env: dict[str, str]) -> AgentConfig:
    return AgentConfig.from_env({k: v for k, v in env.items() if k.startswith("BAND_")})


def test_the_statefulset_runs_one_replica_per_identity_with_probes_on_the_listener() -> None:
    (statefulset,) = load("statefulset.yaml")
    assert statefulset["kind"] == "StatefulSet"
    spec = statefulset["spec"]
    assert spec["replicas"] == 1
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["band-trio", "run"]
    config = config_from(env_of(container))
    assert config.health_port is not None
    assert config.health_host == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["health"] == config.health_port
    for probe, path in (
        ("livenessProbe", LIVEZ_PATH),
        ("readinessProbe", READYZ_PATH),
        ("startupProbe", LIVEZ_PATH),
    ):
        get = container[probe]["httpGet"]
        assert (get["path"], ports[get["port"]]) == (path, config.health_port)
    annotations = spec["template"]["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == config.health_port
    # The grace period outlasts the agent's graceful shutdown.
    assert pod["terminationGracePeriodSeconds"] > config.graceful_shutdown_bound
    # The state directory is on the volume, and the key comes from the Secret.
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert str(config.state_dir) == mounts["state"]
    assert spec["volumeClaimTemplates"][0]["metadata"]["name"] == "state"
    (secret,) = load("secret.yaml")
    assert container["envFrom"] == [{"secretRef": {"name": secret["metadata"]["name"]}}]
    assert set(secret["stringData"]) == {"BAND_AGENT_ID", "BAND_API_KEY"}
    assert "BAND_API_KEY" not in env_of(container)


def test_the_systemd_unit_outlasts_the_drain_and_does_not_restart_in_vain() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "band-agent@.service", encoding="utf-8")
    service = unit["Service"]
    assert "band-trio run" in service["ExecStart"]
    assert service["KillSignal"] == "SIGTERM"
    assert float(service["TimeoutStopSec"]) > AgentConfig().graceful_shutdown_bound
    prevented = {int(s) for s in service["RestartPreventExitStatus"].split()}
    assert prevented == {EXIT_BAD_CONFIG, EXIT_SUPERSEDED}


def test_the_container_recipe_runs_band_trio_run_as_pid_1_with_the_listener() -> None:
    lines = (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines()
    assert 'CMD ["band-trio", "run", "agent.py"]' in lines
    assert "STOPSIGNAL SIGTERM" in lines
    text = "\n".join(lines)
    port = AgentConfig.from_env({"BAND_HEALTH_PORT": "9464"}).health_port
    assert f"BAND_HEALTH_PORT={port}" in text
    assert f"EXPOSE {port}" in lines
    assert f"http://127.0.0.1:{port}{LIVEZ_PATH}" in text
