"""``--web-config FILE``: TLS and basic authentication for ``--serve``, in the format of
Prometheus' exporter-toolkit (``--web.config.file`` of node_exporter and the exporters
built on it; github.com/prometheus/exporter-toolkit, docs/web-configuration.md):

.. code-block:: yaml

    tls_server_config:
      cert_file: server.crt        # relative paths: from the file's directory
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # or VerifyClientCertIfGiven, NoClientCert
      client_ca_file: clients-ca.crt
      min_version: TLS12            # TLS10 .. TLS13; max_version likewise
    basic_auth_users:
      prometheus: $2y$10$...        # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\\n')

Every problem with the file is one line naming it, exit code 2, at start-up
(:class:`WebConfigError`). Keys this implementation does not honour are refused rather
than ignored (``RequestClientCert`` and ``RequireAnyClientCert`` ask for a client
certificate without verifying it, which Python's ``ssl`` cannot do; ``cipher_suites``,
``http_server_config``...): a setting silently dropped would be a hole.

Passwords are checked by :mod:`.basicauth`: with bcrypt, off the serving thread, each
verdict remembered, the checks each client address asks for limited.
"""

from __future__ import annotations

import os
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass

import yaml

from tiptop.errors import UsageError
from tiptop.exporter.basicauth import BasicAuth, time_cost_4
from tiptop.exporter.httpd import Deferred, Reply, Request

#: exporter-toolkit's ``client_auth_type`` values honoured -> ssl verify mode.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
#: ``min_version`` / ``max_version`` names.
VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version"}
_TLS_KEYS |= {"max_version"}
#: A bcrypt hash: ``$2a$``, ``$2b$`` or ``$2y$``, the cost, 53 characters of salt and hash.
_BCRYPT = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")


class WebConfigError(UsageError):
    """The file is unreadable or wrong (exit code 2)."""


@dataclass(frozen=True)
class WebConfig:
    """What ``--web-config`` asks: a TLS context, users (None: no authentication)."""

    tls: ssl.SSLContext | None = None
    auth: BasicAuth | None = None

    def guard(self, handler: Callable[[Request], Reply]) -> Callable[[Request], Reply | Deferred]:
        """``handler`` behind basic authentication (:meth:`BasicAuth.gate`)."""
        auth = self.auth
        if auth is None:
            return handler
        return lambda request: auth.gate(request, handler)


def load(path: str) -> WebConfig:
    """Read and check the file at ``path``. Raises :class:`WebConfigError`, one line."""

    def fail(why: str) -> WebConfigError:
        return WebConfigError(f"--web-config {path}: {why}")

    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as err:
        raise fail(str(err.strerror)) from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise fail(f"not YAML ({' '.join(str(err).split())})") from None
    if doc is None:
        return WebConfig()
    if not isinstance(doc, dict):
        raise fail("not a mapping of settings")
    unknown = sorted(str(k) for k in doc if k not in ("tls_server_config", "basic_auth_users"))
    if unknown:
        raise fail(f"{', '.join(unknown)}: not supported (tls_server_config, basic_auth_users)")
    folder = os.path.dirname(os.path.abspath(path))
    tls = doc.get("tls_server_config")
    auth = doc.get("basic_auth_users")
    return WebConfig(
        _tls(tls, folder, fail) if tls is not None else None,
        _users(auth, fail) if auth is not None else None,
    )


def _tls(conf: object, folder: str, fail: Callable[[str], WebConfigError]) -> ssl.SSLContext:
    """The server context of ``tls_server_config``."""
    if not isinstance(conf, dict):
        raise fail("tls_server_config: not a mapping")
    unknown = sorted(str(k) for k in conf if k not in _TLS_KEYS)
    if unknown:
        raise fail(f"tls_server_config: {', '.join(unknown)}: not supported")
    for key in ("cert_file", "key_file"):
        if not isinstance(conf.get(key), str) or not conf[key]:
            raise fail(f"tls_server_config: {key} missing")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    where = {k: os.path.join(folder, v) for k, v in conf.items() if k.endswith("_file")}
    try:
        ctx.load_cert_chain(where["cert_file"], where["key_file"])
    except OSError as err:
        raise fail(f"tls_server_config: certificate or key: {_why(err)}") from None
    auth_type = conf.get("client_auth_type", "NoClientCert")
    if auth_type not in CLIENT_AUTH:
        raise fail(
            f"client_auth_type {auth_type}: not supported ({', '.join(CLIENT_AUTH)}; "
            "Python's ssl verifies every client certificate it asks for)"
        )
    ctx.verify_mode = CLIENT_AUTH[auth_type]
    if ctx.verify_mode != ssl.CERT_NONE:
        if "client_ca_file" not in where:
            raise fail(f"client_auth_type {auth_type}: client_ca_file missing")
        try:
            ctx.load_verify_locations(where["client_ca_file"])
        except OSError as err:
            raise fail(f"client_ca_file: {_why(err)}") from None
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        name = conf.get(key, default)
        if name not in VERSIONS:
            raise fail(f"{key} {name}: not one of {', '.join(VERSIONS)}")
        if key == "min_version":
            ctx.minimum_version = VERSIONS[name]
        else:
            ctx.maximum_version = VERSIONS[name]
    return ctx


def _why(err: OSError) -> str:
    """What went wrong reading a certificate, key or CA file, in a few words."""
    if isinstance(err, ssl.SSLError):
        return f"{err.reason or err} (not a PEM certificate and its key?)"
    return str(err.strerror or err)


def _users(conf: object, fail: Callable[[str], WebConfigError]) -> BasicAuth:
    """The users of ``basic_auth_users``, each hash checked to be bcrypt's."""
    if not isinstance(conf, dict) or not conf:
        raise fail("basic_auth_users: not a mapping of users to bcrypt hashes")
    users: dict[str, bytes] = {}
    for user, hashed in conf.items():
        if not isinstance(user, str) or ":" in user or not user:
            raise fail(f"basic_auth_users: {user!r}: not a user name")
        if not isinstance(hashed, str) or not _BCRYPT.fullmatch(hashed):
            raise fail(f"basic_auth_users: {user}: not a bcrypt hash ($2a$, $2b$ or $2y$)")
        users[user] = hashed.encode()
    return BasicAuth(users, time_cost_4())


__all__ = ["CLIENT_AUTH", "VERSIONS", "WebConfig", "WebConfigError", "load"]
