"""Certificates for simulators that speak TLS, as the providers they stand for do.

A real provider is reached over ``wss://`` and ``https://``; a call's sockets
then pay for TLS (the context, the handshake) as they do in production. The
simulators can serve TLS with a certificate for ``localhost`` signed by a CA
made for the run, which the runner trusts through ``SSL_CERT_FILE``. That
file holds certifi's CA bundle too, as a production trust store does: loading
it is what every TLS context costs, and a bundle of one CA would hide that.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import certifi
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOST = "localhost"


@dataclass(frozen=True)
class Certificates:
    """A CA's certificate, and a server certificate for localhost with its key, as PEM files.

    ``ca`` holds the run's CA after certifi's bundle: what the runner is told to trust.
    """

    ca: Path
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issue(folder: Path, label: str = "simulators", ca_name: str = "Simulators CA") -> Certificates:
    """A new CA, and a certificate for localhost (and 127.0.0.1) that it signed, in ``folder``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(ca_name))
        .issuer_name(_name(ca_name))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(HOST), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(HOST))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    issued = Certificates(
        folder / f"{label}-ca.pem", folder / f"{label}.pem", folder / f"{label}.key"
    )
    bundle = Path(certifi.where()).read_bytes()
    issued.ca.write_bytes(bundle + b"\n" + ca.public_bytes(serialization.Encoding.PEM))
    issued.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    issued.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return issued
