"""The technician's password: hashed with scrypt in one small file, and `ballreader passwd`.

There is no default password. `ballreader passwd` reads a new one from standard input; when
none is set at first start, `ensure_password` makes a random one and logs it once.

The file holds one line: `scrypt$N$r$p$salt$hash` (salt and hash in base64), so the cost can
be raised later without breaking stored passwords.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import logging
import os
import secrets
import sys
from pathlib import Path

log = logging.getLogger(__name__)

# OWASP's scrypt settings at 16 MiB of memory (N=2^14, r=8, p=5): a Raspberry Pi checks one
# password in well under a second, a guesser with the file gets few guesses per second.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 5
MIN_LENGTH = 8


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32,
                          maxmem=256 * 1024 * 1024)


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.strip().split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        got = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except (ValueError, TypeError):  # a damaged file never lets anyone in
        return False
    return hmac.compare_digest(got, expected)


def password_path(cfg) -> Path:
    """`web.password_file`, or `web-password` beside the record."""
    return Path(cfg.web.password_file or Path(cfg.record.path).parent / "web-password")


def write_password(path: Path, password: str) -> None:
    """Store the hash atomically (temporary file, fsync, rename), readable by the owner only."""
    if len(password) < MIN_LENGTH:
        raise ValueError(f"the password must have at least {MIN_LENGTH} characters")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(hash_password(password) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_hash(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return text or None


def ensure_password(path: Path) -> str | None:
    """Make and store a random password when none is set; return it (to be shown once)."""
    if read_hash(path) is not None:
        return None
    password = secrets.token_urlsafe(12)
    write_password(path, password)
    log.warning("no web password was set: generated one for user 'technician': %s "
                "(stored hashed in %s; change it with `ballreader passwd`)", password, path)
    return password


# -- the command ---------------------------------------------------------------------------

def _passwd(args: argparse.Namespace) -> int:
    from services.config import load_config

    cfg = load_config(args.config)
    path = password_path(cfg)
    if sys.stdin.isatty():
        import getpass

        password = getpass.getpass("New web password: ")
        if getpass.getpass("Again: ") != password:
            print("ballreader passwd: the two passwords differ", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    try:
        write_password(path, password)
    except ValueError as e:
        print(f"ballreader passwd: {e}", file=sys.stderr)
        return 1
    print(f"web password stored in {path} (restart the appliance to end existing sessions)")
    return 0


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`ballreader passwd [--config PATH]`: the password is read from standard input."""
    parser = subparsers.add_parser("passwd", help="set the technician's web password (read from stdin)")
    parser.add_argument("--config", type=Path, help="TOML config file (default: built-in defaults)")
    parser.set_defaults(func=_passwd)
    return parser
