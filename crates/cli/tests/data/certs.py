"""Makes the certificates the TLS tests use, with Python's `cryptography`:

ca.pem            a self-signed CA
server.pem/.key   signed by the CA for 127.0.0.1 and localhost, valid now
expired.pem/.key  the same names, expired a year ago
wronghost.pem/.key  valid now, for other.example only

Usage: certs.py DIR
"""
import datetime
import ipaddress
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

out = Path(sys.argv[1])
now = datetime.datetime.now(datetime.timezone.utc)
day = datetime.timedelta(days=1)


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def write_key(key, path):
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


ca_key = ec.generate_private_key(ec.SECP256R1())
ca = (
    x509.CertificateBuilder()
    .subject_name(name("Tempora test CA"))
    .issuer_name(name("Tempora test CA"))
    .public_key(ca_key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(now - 3 * 365 * day)
    .not_valid_after(now + 365 * day)
    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    .add_extension(
        x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
    )
    .sign(ca_key, hashes.SHA256())
)
(out / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))


def leaf(stem, names, start, end):
    key = ec.generate_private_key(ec.SECP256R1())
    alt = []
    for n in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            alt.append(x509.DNSName(n))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    (out / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    write_key(key, out / f"{stem}.key")


leaf("server", ["127.0.0.1", "localhost"], now - day, now + 30 * day)
leaf("expired", ["127.0.0.1", "localhost"], now - 2 * 365 * day, now - 365 * day)
leaf("wronghost", ["other.example"], now - day, now + 30 * day)
