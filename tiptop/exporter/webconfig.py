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

The file is checked as a schema before anything starts: each setting's type and value, the
files it names, how the settings go together. Every problem is one line naming the file,
exit code 2 (:class:`WebConfigError`), and what is allowed but unwise is said once
(:attr:`WebConfig.warnings`). The 2026-11-29 attack found four files that ended in a
traceback (a number, a list, a mapping or null where a name goes), a FIFO as the file or
as the certificate that hung start-up, a ``min_version`` above ``max_version`` that
started and then failed every handshake, an empty file or section served as plain HTTP
without a word, and a world-readable private key taken without one. Now:

* the file and the files it names are read only when they are regular files (``stat``
  before they are opened, as opening a FIFO blocks and a device may act on an open; then
  ``O_NONBLOCK`` and ``fstat``), of at most :data:`MAX_FILE` bytes; the certificate, key
  and CA are loaded from the very file checked (``/proc/self/fd``);
* an empty file, or a section that is empty or null, is refused: a ``--web-config`` that
  asks for nothing would serve plain HTTP to someone who asked for TLS or passwords;
* a bcrypt cost outside bcrypt's 4..31 is refused, and one above 12 said, with the time a
  check takes here (:mod:`.basicauth` runs checks off the serving thread);
* a private key that every user may read, and a file that every user may write, are said.

Keys this implementation does not honour are refused rather than ignored
(``RequestClientCert`` and ``RequireAnyClientCert`` ask for a client certificate without
verifying it, which Python's ``ssl`` cannot do; ``cipher_suites``, ``http_server_config``...),
and so is a ``client_ca_file`` without a ``client_auth_type`` that verifies (as
exporter-toolkit refuses it): a setting silently dropped would be a hole.
"""

from __future__ import annotations

import os
import re
import ssl
import stat
from collections.abc import Callable

import yaml

from tiptop.errors import UsageError
from tiptop.exporter.basicauth import BasicAuth, check_seconds, cost_of, time_cost_4
from tiptop.exporter.httpd import RESPONSE_TIMEOUT, Deferred, Reply, Request
from tiptop.files import file_kind
from tiptop.readonly import by_value

#: exporter-toolkit's ``client_auth_type`` values honoured -> ssl verify mode.
CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
#: ``min_version`` / ``max_version`` names, in order.
VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
#: The sections of the file.
SECTIONS = ("tls_server_config", "basic_auth_users")
#: The settings of ``tls_server_config``: files, and names from a fixed set.
_TLS_FILES = ("cert_file", "key_file", "client_ca_file")
_TLS_NAMES: dict[str, tuple[str, ...]] = {
    "client_auth_type": tuple(CLIENT_AUTH),
    "min_version": tuple(VERSIONS),
    "max_version": tuple(VERSIONS),
}
#: A bcrypt hash: ``$2a$``, ``$2b$`` or ``$2y$``, the cost, 53 characters of salt and hash.
_BCRYPT = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")
#: bcrypt's costs (its log2 rounds), and the highest not said at start-up.
COSTS = range(4, 32)
USUAL_COST = 12
#: The most bytes read of the file, or of a certificate, key or CA file it names.
MAX_FILE = 1 << 20


class WebConfigError(UsageError):
    """The file is unreadable or wrong (exit code 2)."""


@by_value
class WebConfig:
    """What ``--web-config`` asks: a TLS context, users (None: no authentication), and what
    to say at start-up about it."""

    tls: ssl.SSLContext | None = None
    auth: BasicAuth | None = None
    warnings: tuple[str, ...] = ()
    #: In words, for the start line: ``client certificates required``...
    client_certificates: str = ""

    def guard(self, handler: Callable[[Request], Reply]) -> Callable[[Request], Reply | Deferred]:
        """``handler`` behind basic authentication (:meth:`BasicAuth.gate`)."""
        auth = self.auth
        if auth is None:
            return handler
        return lambda request: auth.gate(request, handler)

    def describe(self) -> str:
        """What is on, for the start line: ``basic auth (2 users)``, ``client certificates
        required``."""
        parts = [self.client_certificates] if self.client_certificates else []
        if self.auth is not None:
            n = len(self.auth.users)
            parts.append(f"basic auth ({n} user{'s' if n != 1 else ''})")
        return ", ".join(parts)


Fail = Callable[[str], WebConfigError]


def load(path: str) -> WebConfig:
    """Read and check the file at ``path``. Raises :class:`WebConfigError`, one line."""

    def fail(why: str) -> WebConfigError:
        return WebConfigError(f"--web-config {path}: {why}")

    fd, st = _open_regular(path, "", fail)
    try:
        raw = _read(fd)
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE:
        raise fail(f"more than {MAX_FILE >> 20} MiB: not a web configuration")
    try:
        doc = yaml.safe_load(raw.decode("utf-8"))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise fail(f"not YAML ({at}{err.problem or err.context})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise fail(f"not YAML ({' '.join(str(err).split())})") from None
    except RecursionError:
        raise fail("not YAML (nested too deep)") from None
    if doc is None:
        raise fail(
            f"empty: neither {' nor '.join(SECTIONS)} (leave --web-config out to serve plain HTTP)"
        )
    if not isinstance(doc, dict):
        raise fail(f"not a mapping of settings ({_kind(doc)})")
    unknown = sorted(repr(k) if not isinstance(k, str) else k for k in doc if k not in SECTIONS)
    if unknown:
        raise fail(f"{', '.join(unknown)}: not supported ({', '.join(SECTIONS)})")
    for section, what in zip(
        SECTIONS, ("cert_file and key_file", "user: bcrypt hash"), strict=True
    ):
        if section in doc and not doc[section]:
            raise fail(f"{section}: empty (give {what}, or leave the section out)")
    warnings: list[str] = []
    if st.st_mode & stat.S_IWOTH:
        warnings.append(
            f"writable by every user (mode {stat.S_IMODE(st.st_mode):04o}): anyone may change "
            "who logs in; chmod o-w it"
        )
    folder = os.path.dirname(os.path.abspath(path))
    tls, certificates = None, ""
    if "tls_server_config" in doc:
        tls, certificates = _tls(doc["tls_server_config"], folder, fail, warnings.append)
    auth = None
    if "basic_auth_users" in doc:
        auth = _users(doc["basic_auth_users"], fail, warnings.append)
    return WebConfig(tls, auth, tuple(f"--web-config {path}: {w}" for w in warnings), certificates)


def _tls(
    conf: object, folder: str, fail: Fail, warn: Callable[[str], None]
) -> tuple[ssl.SSLContext, str]:
    """The server context of ``tls_server_config``, and the client certificates it asks
    for in words."""
    if not isinstance(conf, dict):
        raise fail(f"tls_server_config: not a mapping of settings ({_kind(conf)})")
    allowed = (*_TLS_FILES, *_TLS_NAMES)
    unknown = sorted(repr(k) if not isinstance(k, str) else k for k in conf if k not in allowed)
    if unknown:
        raise fail(f"tls_server_config: {', '.join(unknown)}: not supported")
    for key in _TLS_FILES:
        if key in conf and (not isinstance(conf[key], str) or not conf[key]):
            raise fail(f"tls_server_config: {key}: not a file name ({_kind(conf[key])})")
    for key in ("cert_file", "key_file"):
        if key not in conf:
            raise fail(f"tls_server_config: {key} missing")
    names: dict[str, str] = {}
    for key, choices in _TLS_NAMES.items():
        value = conf.get(key, {"client_auth_type": "NoClientCert"}.get(key))
        if value is None:
            continue
        if not isinstance(value, str) or value not in choices:
            shown = value if isinstance(value, str) else f"({_kind(value)})"
            why = f"not one of {', '.join(choices)}"
            if key == "client_auth_type" and value in ("RequestClientCert", "RequireAnyClientCert"):
                why = (
                    f"not supported ({', '.join(choices)}; Python's ssl verifies every "
                    "client certificate it asks for)"
                )
            raise fail(f"tls_server_config: {key} {shown}: {why}")
        names[key] = value
    low, high = names.get("min_version", "TLS12"), names.get("max_version", "TLS13")
    if VERSIONS[low] > VERSIONS[high]:
        raise fail(
            f"tls_server_config: min_version {low} is above max_version {high}: no TLS version left"
        )
    auth_type = names["client_auth_type"]
    verify = CLIENT_AUTH[auth_type]
    if verify != ssl.CERT_NONE and "client_ca_file" not in conf:
        raise fail(f"tls_server_config: client_auth_type {auth_type}: client_ca_file missing")
    if verify == ssl.CERT_NONE and "client_ca_file" in conf:
        raise fail(
            "tls_server_config: client_ca_file without a client_auth_type that verifies "
            "(RequireAndVerifyClientCert or VerifyClientCertIfGiven): no certificate would "
            "be asked for"
        )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    opened: dict[str, int] = {}
    try:
        for key in _TLS_FILES:
            if key in conf:
                name = f"tls_server_config: {key} {conf[key]}"
                fd, st = _open_regular(os.path.join(folder, conf[key]), name, fail)
                opened[key] = fd
                if key == "key_file" and st.st_mode & stat.S_IROTH:
                    warn(
                        f"tls_server_config: key_file {conf[key]} is readable by every user "
                        f"(mode {stat.S_IMODE(st.st_mode):04o}): chmod o-r it"
                    )
        try:
            ctx.load_cert_chain(_by_fd(opened["cert_file"]), _by_fd(opened["key_file"]))
        except OSError as err:
            raise fail(f"tls_server_config: certificate or key: {_why(err)}") from None
        if "client_ca_file" in opened:
            try:
                ctx.load_verify_locations(_by_fd(opened["client_ca_file"]))
            except OSError as err:
                raise fail(f"tls_server_config: client_ca_file: {_why(err)}") from None
    finally:
        for fd in opened.values():
            os.close(fd)
    ctx.verify_mode = verify
    ctx.minimum_version, ctx.maximum_version = VERSIONS[low], VERSIONS[high]
    certificates = {
        ssl.CERT_REQUIRED: "client certificates required",
        ssl.CERT_OPTIONAL: "client certificates verified if given",
    }.get(verify, "")
    return ctx, certificates


def _users(conf: object, fail: Fail, warn: Callable[[str], None]) -> BasicAuth:
    """The users of ``basic_auth_users``, each hash checked to be bcrypt's, of a cost
    bcrypt takes; a high cost said with the time a check takes here."""
    if not isinstance(conf, dict):
        raise fail(f"basic_auth_users: not a mapping of users to bcrypt hashes ({_kind(conf)})")
    users: dict[str, bytes] = {}
    for user, hashed in conf.items():
        if not isinstance(user, str) or ":" in user or not user:
            raise fail(f"basic_auth_users: {user!r}: not a user name")
        if not isinstance(hashed, str) or not _BCRYPT.fullmatch(hashed):
            raise fail(f"basic_auth_users: {user}: not a bcrypt hash ($2a$, $2b$ or $2y$)")
        cost = cost_of(hashed.encode())
        if cost not in COSTS:
            raise fail(
                f"basic_auth_users: {user}: bcrypt cost {cost}: not in bcrypt's "
                f"{COSTS[0]}..{COSTS[-1]}"
            )
        users[user] = hashed.encode()
    at_cost_4 = time_cost_4()
    for user, hashed in users.items():
        cost = cost_of(hashed)
        if cost > USUAL_COST:
            took = check_seconds(cost, at_cost_4)
            said = f"bcrypt cost {cost}: a check takes about {_duration(took)} here"
            if took > RESPONSE_TIMEOUT:
                said += (
                    f", longer than a scrape waits ({RESPONSE_TIMEOUT:g} s): this user "
                    "cannot log in"
                )
            warn(f"basic_auth_users: {user}: {said} (10 to {USUAL_COST} is usual)")
    costs = sorted({cost_of(h) for h in users.values()})
    if len(costs) > 1:
        warn(
            f"basic_auth_users: bcrypt costs differ ({', '.join(map(str, costs))}): unknown "
            f"users are checked at {costs[-1]}, so a check's time can tell that a user of a "
            "lower cost exists"
        )
    return BasicAuth(users, at_cost_4)


def _open_regular(path: str, name: str, fail: Fail) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file ``path`` (a link to one is followed: certificates
    often are links), of at most :data:`MAX_FILE` bytes. Anything else is refused before it
    is opened (``stat``): opening a FIFO waits for a writer, a device may act on an open;
    one swapped in since is refused all the same (``O_NONBLOCK``, then ``fstat``). ``name``
    says which file in a refusal (empty: the web configuration itself)."""

    def refuse(why: str) -> WebConfigError:
        return fail(f"{name}: {why}" if name else why)

    fd = -1
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            st = os.fstat(fd)
    except OSError as err:
        if fd >= 0:
            os.close(fd)
        raise refuse(str(err.strerror or err)) from None
    why = ""
    if not stat.S_ISREG(st.st_mode):
        why = f"not a regular file ({file_kind(st.st_mode)}): not read"
    elif st.st_size > MAX_FILE:
        why = f"{st.st_size} bytes, more than {MAX_FILE >> 20} MiB: not read"
    if why:
        if fd >= 0:
            os.close(fd)
        raise refuse(why)
    return fd, st


def _read(fd: int) -> bytes:
    """Up to :data:`MAX_FILE` + 1 bytes of ``fd`` (one more says the file is too long)."""
    chunks, total = [], 0
    while total <= MAX_FILE:
        chunk = os.read(fd, MAX_FILE + 1 - total)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _by_fd(fd: int) -> str:
    """A name that opens the very file ``fd`` is (proc(5), ``/proc/self/fd``)."""
    return f"/proc/self/fd/{fd}"


def _kind(value: object) -> str:
    """What a YAML value is, in words: ``a number``, ``a list``, ``null``..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _duration(seconds: float) -> str:
    """``0.9 s``, ``3 min``, ``2.1 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}"
    return f"{seconds:.2g} s"


def _why(err: OSError) -> str:
    """What went wrong reading a certificate, key or CA file, in a few words."""
    if isinstance(err, ssl.SSLError):
        return f"{err.reason or err} (not a PEM certificate and its key?)"
    return str(err.strerror or err)


__all__ = ["CLIENT_AUTH", "COSTS", "MAX_FILE", "VERSIONS", "WebConfig", "WebConfigError", "load"]
