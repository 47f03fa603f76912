"""A real OpenLDAP server (Debian's slapd) on loopback, with the people and groups a test
writes into it: its own config, database and certificate in a temporary folder, the memberOf
overlay on (groups written after start, so that the overlay fills memberOf), StartTLS offered
with a certificate from a CA made for it."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from ldap3 import MODIFY_ADD, MODIFY_DELETE, MODIFY_REPLACE, Connection, Server

from tests.support.llm_server import free_port
from tests.support.processes import terminate

SLAPD = shutil.which("slapd") or "/usr/sbin/slapd"
SCHEMAS = Path("/etc/ldap/schema")
MODULES = Path("/usr/lib/ldap")
BASE = "dc=example,dc=org"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
APPS = f"ou=apps,{BASE}"  # groups of other applications, outside LDAP_GROUP_SEARCH_BASE
ADMIN_DN = f"cn=admin,{BASE}"
ADMIN_PASSWORD = "directory-admin-secret"
SERVICE_DN = f"cn=docchat,{BASE}"
SERVICE_PASSWORD = "service-account-secret"
INSTALL = "apt-get install -y slapd"


def available() -> bool:
    return Path(SLAPD).exists() and (MODULES / "back_mdb.la").exists()


@dataclass
class Person:
    uid: str
    password: str
    mail: str | None
    name: str

    @property
    def dn(self) -> str:
        return f"uid={self.uid},{PEOPLE}"


@dataclass
class LdapServer:
    url: str
    port: int
    ca_file: Path
    process: subprocess.Popen[bytes]
    log: Path
    people: dict[str, Person] = field(default_factory=dict)

    @contextmanager
    def admin(self) -> Iterator[Connection]:
        connection = Connection(
            Server(self.url), user=ADMIN_DN, password=ADMIN_PASSWORD, auto_bind=True
        )
        try:
            yield connection
        finally:
            connection.unbind()

    def add_person(self, uid: str, password: str, mail: str | None, name: str) -> Person:
        person = Person(uid, password, mail, name)
        attributes = {"cn": name, "sn": name.split()[-1], "uid": uid, "userPassword": password}
        if mail:
            attributes["mail"] = mail
        with self.admin() as connection:
            _ok(connection, connection.add(person.dn, ["inetOrgPerson"], attributes))
        self.people[uid] = person
        return person

    def set_mail(self, uid: str, mail: str) -> None:
        with self.admin() as connection:
            changes = {"mail": [(MODIFY_REPLACE, [mail])]}
            _ok(connection, connection.modify(self.people[uid].dn, changes))

    def add_group(self, name: str, *uids: str, under: str = GROUPS) -> None:
        # groupOfNames needs a member: the directory's administrator stays in every group.
        members = [ADMIN_DN, *(self.people[uid].dn for uid in uids)]
        with self.admin() as connection:
            dn = f"cn={name},{under}"
            _ok(connection, connection.add(dn, ["groupOfNames"], {"cn": name, "member": members}))

    def add_posix_group(self, name: str, *uids: str) -> None:
        """A group that names its members by login name (memberUid), not by DN."""
        with self.admin() as connection:
            attributes = {"cn": name, "gidNumber": "5000", "memberUid": list(uids)}
            _ok(connection, connection.add(f"cn={name},{GROUPS}", ["posixGroup"], attributes))

    def join(self, group: str, uid: str) -> None:
        self._membership(group, uid, MODIFY_ADD)

    def leave(self, group: str, uid: str) -> None:
        self._membership(group, uid, MODIFY_DELETE)

    def _membership(self, group: str, uid: str, change: str) -> None:
        with self.admin() as connection:
            changes = {"member": [(change, [self.people[uid].dn])]}
            _ok(connection, connection.modify(f"cn={group},{GROUPS}", changes))

    def stop(self) -> None:
        terminate(self.process)


def _ok(connection: Connection, done: bool) -> None:
    if not done:
        raise RuntimeError(f"LDAP write refused: {connection.result}")


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a certificate for 127.0.0.1 and localhost signed by it (PEM files)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "docchat test directory CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


def _config(folder: Path, ca: Path, certificate: Path, key: Path) -> Path:
    schemas = "\n".join(
        f"include {SCHEMAS / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis")
    )
    config = folder / "slapd.conf"
    config.write_text(
        f"""{schemas}
modulepath {MODULES}
moduleload back_mdb
moduleload memberof
pidfile {folder / "slapd.pid"}
TLSCACertificateFile {ca}
TLSCertificateFile {certificate}
TLSCertificateKeyFile {key}
database mdb
maxsize 10485760
suffix "{BASE}"
rootdn "{ADMIN_DN}"
rootpw {ADMIN_PASSWORD}
directory {folder / "db"}
overlay memberof
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
"""
    )
    return config


@contextmanager
def running_slapd(folder: Path) -> Iterator[LdapServer]:
    """slapd on a free loopback port with the base entries, a service account for searches,
    and no people yet."""
    (folder / "db").mkdir(parents=True)
    ca, certificate, key = _certificates(folder)
    config = _config(folder, ca, certificate, key)
    port = free_port()
    url = f"ldap://127.0.0.1:{port}"
    log = folder / "slapd.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603
            [SLAPD, "-f", str(config), "-h", f"{url}/", "-d", "0"], stdout=out, stderr=out
        )
    server = LdapServer(url=url, port=port, ca_file=ca, process=process, log=log)
    try:
        _wait(server)
        with server.admin() as connection:
            _ok(
                connection,
                connection.add(
                    BASE, ["dcObject", "organization"], {"dc": "example", "o": "Example"}
                ),
            )
            for unit in ("people", "groups", "apps"):
                _ok(
                    connection,
                    connection.add(f"ou={unit},{BASE}", ["organizationalUnit"], {"ou": unit}),
                )
            _ok(
                connection,
                connection.add(
                    SERVICE_DN,
                    ["organizationalRole", "simpleSecurityObject"],
                    {"cn": "docchat", "userPassword": SERVICE_PASSWORD},
                ),
            )
        yield server
    finally:
        server.stop()


def _wait(server: LdapServer, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"slapd exited:\n{server.log.read_text(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            return
        except OSError:  # not listening yet
            time.sleep(0.1)
    raise RuntimeError(f"slapd did not start:\n{server.log.read_text(errors='replace')}")
