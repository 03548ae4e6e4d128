"""docker-compose.yml's multi-host wiring: every queue the settings route a task to has a
worker service reading it, and the rounds' tasks never share a queue with the jobs; the web
runs as replicas behind one nginx entry point (config/nginx.conf), with migrations run once
and the session store shared by every replica. Docker cannot run here: these read the files
as docker compose and nginx would."""

import ipaddress
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
TASKS = (
    "annotation.tasks.run_job",
    "annotation.tasks.compute_consensus",
    "annotation.tasks.compute_consensus_batch",
    "annotation.tasks.request_aggregation",
    "annotation.tasks.sweep_jobs",
)


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def app_environment() -> dict[str, str]:
    env = compose()["x-app"]["environment"]
    return {key: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(value)) for key, value in env.items()}


def in_container(code: str, env: dict[str, str]) -> str:
    """What `code` prints after django.setup() in a process with `env` (and no other settings)."""
    keep = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "HOME", "LANG", "VIRTUAL_ENV"))}
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def routes(env: dict[str, str]) -> dict[str, str]:
    """The queue each task goes to under `env`, as the Celery app of a container routes it."""
    code = f"from config.celery import app; print(*(app.amqp.router.route({{}}, name)['queue'].name for name in {TASKS!r}))"
    wanted = {key: env[key] for key in ("CELERY_QUEUE", "CELERY_JOBS_QUEUE", "DATABASE_REPLICA_URL")}
    output = in_container(code, {**wanted, "DJANGO_SETTINGS_MODULE": "config.settings.test"})
    return dict(zip(TASKS, output.split()))


def nginx_config(text: str) -> list:
    """config/nginx.conf as nginx reads it: a list of (directive, arguments, block or None)."""
    tokens = re.findall(r'"[^"]*"|\'[^\']*\'|[{};]|[^\s{};"\']+', re.sub(r"#[^\n]*", "", text))
    position = 0

    def block() -> list:
        nonlocal position
        directives: list = []
        words: list[str] = []
        while position < len(tokens):
            token = tokens[position]
            position += 1
            if token == ";":
                directives.append((words[0], words[1:], None))
                words = []
            elif token == "{":
                directives.append((words[0], words[1:], block()))
                words = []
            elif token == "}":
                assert not words, f"{words} not ended by ;"
                return directives
            else:
                words.append(token.strip("\"'"))
        assert not words, f"{words} not ended by ;"
        return directives

    directives = block()
    assert position == len(tokens), "a } without its {"
    return directives


def find(directives: list, name: str, *arguments: str) -> list:
    """The directives called `name` (whose first arguments are `arguments`), in order."""
    return [d for d in directives if d[0] == name and tuple(d[1][: len(arguments)]) == arguments]


def one(directives: list, name: str, *arguments: str) -> tuple:
    found = find(directives, name, *arguments)
    assert len(found) == 1, f"{name} {arguments}: {len(found)} directives"
    return found[0]


def queues_read(service: dict) -> set[str]:
    command = service["command"]
    assert "worker" in command
    return set(command[command.index("-Q") + 1].split(","))


def test_every_routed_queue_has_its_own_workers_and_jobs_stay_apart_from_rounds():
    services = compose()["services"]
    routed = routes(app_environment())
    workers = {
        name: queues_read(service) for name, service in services.items() if "worker" in service.get("command", [])
    }
    assert set(workers) == {"worker", "worker-jobs"}
    assert routed["annotation.tasks.run_job"] == "mashov-jobs"
    assert {routed[name] for name in TASKS[1:]} == {"mashov"}
    assert workers == {"worker": {"mashov"}, "worker-jobs": {"mashov-jobs"}}
    # Beat publishes only the sweep, which goes to the rounds' queue.
    assert "beat" in services["beat"]["command"]


def test_web_replicas_behind_one_nginx_entry_point():
    services = compose()["services"]
    web, proxy = services["web"], services["proxy"]
    # The replicas: two unless WEB_REPLICAS says otherwise, reached only through the proxy.
    assert web["deploy"]["replicas"] == "${WEB_REPLICAS:-2}"
    assert [name for name, service in services.items() if service.get("ports")] == ["proxy"]
    assert proxy["ports"] == ["127.0.0.1:8000:8000"]
    assert proxy["image"].startswith("nginx:")
    assert proxy["volumes"] == ["./config/nginx.conf:/etc/nginx/conf.d/default.conf:ro"]
    assert proxy["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert "/healthz/" in " ".join(proxy["healthcheck"]["test"])
    assert "/healthz/" in " ".join(web["healthcheck"]["test"])

    config = nginx_config((ROOT / "config" / "nginx.conf").read_text())
    # Docker's DNS, asked again as replicas come and go; the service name stands for them all.
    assert one(config, "resolver")[1][0] == "127.0.0.11"
    upstream = one(config, "upstream")
    assert find(upstream[2], "zone")
    assert [d[1] for d in find(upstream[2], "server")] == [["web:8000", "resolve"]]
    server = one(config, "server")[2]
    assert one(server, "listen")[1] == ["8000"]
    # Nginx's 1 MiB default would refuse the imports the application accepts.
    limit = one(server, "client_max_body_size")[1][0]
    assert limit.endswith("m") and int(limit[:-1]) * 2**20 > 64 * 2**20
    location = one(server, "location", "/")[2]
    assert one(location, "proxy_pass")[1] == [f"http://{upstream[1][0]}"]
    headers = {d[1][0].lower(): d[1][1] for d in find(location, "proxy_set_header")}
    assert headers["host"] == "$http_host"
    assert headers["x-forwarded-for"] == "$proxy_add_x_forwarded_for"
    # X-Forwarded-Proto: a TLS proxy's in front, else this connection's scheme.
    proto_map = one(config, "map", "$http_x_forwarded_proto", headers["x-forwarded-proto"])
    assert {d[0]: d[1] for d in proto_map[2]} == {"default": ["$http_x_forwarded_proto"], "": ["$scheme"]}


def test_the_login_throttle_trusts_the_proxys_network_and_nothing_wider():
    env = compose()["x-app"]["environment"]
    subnet = ipaddress.ip_network(compose()["networks"]["default"]["ipam"]["config"][0]["subnet"])
    trusted = [ipaddress.ip_network(net) for net in app_environment()["TRUSTED_PROXIES"].split(",")]
    assert trusted == [subnet], env["TRUSTED_PROXIES"]
    assert subnet.is_private


def test_migrations_run_once_before_any_web_worker_or_beat():
    services = compose()["services"]
    migrating = [name for name, service in services.items() if "migrate" in service.get("command", [])]
    assert migrating == ["migrate"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert services["migrate"]["restart"] == "no"  # one-shot: done, it stays done
    for name in ("web", "worker", "worker-jobs", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name


def test_every_web_replica_shares_the_sessions_and_the_cache():
    """Production settings under the compose environment: sessions in PostgreSQL and the cache
    (login throttling) in the compose Redis, both reached by every replica."""
    env = {
        **app_environment(),
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": "x" * 50,
    }
    output = in_container(
        "from django.conf import settings; import json; "
        "print(json.dumps([settings.SESSION_ENGINE, settings.CACHES['default'], settings.DATABASES['default']['HOST']]))",
        env,
    )
    engine, cache, database_host = json.loads(output)
    assert engine == "django.contrib.sessions.backends.db"
    assert database_host == "postgres"
    assert cache["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert cache["LOCATION"].startswith("redis://redis:")


def test_the_webs_and_the_workers_share_the_release_storage():
    """The `release` job writes its files on the jobs' worker and any web serves the zip: every
    container of the application image mounts one volume where the image's settings put the
    release files, and that folder belongs to the user the image runs as (the code does not)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    release_root = re.search(r"^ENV MASHOV_RELEASE_ROOT=(\S+)$", dockerfile, re.MULTILINE)
    assert release_root, "the image names its release folder"
    user = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)[-1]
    owned = re.search(rf"chown -R {user}:{user} (\S+)", dockerfile)
    assert owned and Path(release_root[1]).is_relative_to(owned[1])
    services = compose()["services"]
    app = [name for name, service in services.items() if service.get("image") == "mashov:latest"]
    assert {"web", "worker", "worker-jobs"} <= set(app)
    for name in app:
        mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in services[name].get("volumes", [])}
        assert mounts.get(release_root[1]) == "releases", name
    assert "releases" in compose()["volumes"]
