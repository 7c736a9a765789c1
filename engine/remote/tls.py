# SPDX-License-Identifier: MIT
"""TLS for the remote protocol: a self-signed certificate, its fingerprint, and pinning.

Engines usually run on servers without a certificate authority, so the console trusts on first
use, the way SSH does: the first connection to ``host:port`` stores the certificate's SHA-256
fingerprint (shown by ``qwconsole engine cert`` on the server, to compare by eye), and every
later connection must present the same certificate. The token is sent only after that check.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import ssl
import subprocess
from pathlib import Path


class TlsError(RuntimeError):
    """A certificate could not be made, read or trusted; the message says why."""


def fingerprint(der: bytes) -> str:
    """Return the SHA-256 fingerprint of a DER certificate as ``AB:CD:...``."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def file_fingerprint(cert: Path) -> str:
    """Return the SHA-256 fingerprint of the PEM certificate in ``cert``."""
    try:
        pem = cert.read_text(encoding="ascii")
        return fingerprint(ssl.PEM_cert_to_DER_cert(pem))
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise TlsError(f"{cert}: not a readable PEM certificate: {e}") from None


def make_self_signed(cert: Path, key: Path, host: str = "localhost", days: int = 825) -> str:
    """Write a new self-signed certificate and private key (P-256); return the fingerprint.

    Uses the ``openssl`` command (present wherever Python's ssl module is built). The key file
    is readable by its owner only.
    """
    exe = shutil.which("openssl")
    if exe is None:
        raise TlsError("the openssl command is not installed; it is needed to make certificates")
    cert.parent.mkdir(parents=True, exist_ok=True)
    key.parent.mkdir(parents=True, exist_ok=True)
    alt = f"DNS:{host},DNS:localhost,IP:127.0.0.1"
    args = [exe, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", str(days),
            "-subj", f"/CN={host}", "-addext", f"subjectAltName={alt}"]  # fmt: skip
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TlsError(f"openssl failed: {e}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise TlsError(f"openssl failed ({done.returncode}): {last}")
    os.chmod(key, 0o600)
    return file_fingerprint(cert)


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """Return a TLS 1.2+ server context with ``cert`` and ``key``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise TlsError(f"cannot load certificate {cert} / key {key}: {e}") from None
    return ctx


def client_context() -> ssl.SSLContext:
    """Return a client context that leaves trust to the pin check (self-signed certificates)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # trust comes from the pinned fingerprint instead
    return ctx


class PinStore:
    """Fingerprints of the engines a console trusts, by ``host:port`` (a small JSON file)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise TlsError(f"{self.path}: cannot read pinned fingerprints: {e}") from None
        if not isinstance(data, dict):
            raise TlsError(f"{self.path}: expected a JSON object of host:port -> fingerprint")
        return {str(k): str(v) for k, v in data.items()}

    def get(self, endpoint: str) -> str | None:
        """Return the pinned fingerprint of ``endpoint``, or ``None``."""
        return self._read().get(endpoint)

    def check(self, endpoint: str, presented: str) -> bool:
        """Pin ``presented`` on first use; return whether it matches the pinned fingerprint.

        Returns ``True`` (and stores it) the first time, then ``True`` only for the same one.
        """
        pins = self._read()
        pinned = pins.get(endpoint)
        if pinned is None:
            pins[endpoint] = presented
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(self.path)
            return True
        return pinned == presented

    def forget(self, endpoint: str) -> bool:
        """Remove the pin of ``endpoint`` (after the engine's certificate was renewed)."""
        pins = self._read()
        if pins.pop(endpoint, None) is None:
            return False
        self.path.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return True
