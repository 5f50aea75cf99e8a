"""The one self-signed certificate builder of the TLS tests and benchmarks (``bench.services``): what its
parameters put in the certificate, and that a client trusting the certificate itself completes a verified
handshake with it, as a leaf and as a CA."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from bench.services import self_signed_certificate, tls_server_context


def _load(path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


@pytest.mark.parametrize("ca", [False, True])
def test_the_parameters_are_what_the_certificate_says(tmp_path, ca):
    cert_path, key_path = self_signed_certificate(
        tmp_path, "hooks.example", ips=("127.0.0.1", "::1"), ca=ca, days=3
    )
    cert = _load(cert_path)
    assert cert.issuer == cert.subject
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is ca
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["hooks.example"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == datetime.timedelta(days=3, hours=1)
    assert key_path.stat().st_mode & 0o777 == 0o600


def test_defaults_are_a_leaf_for_localhost_and_127_0_0_1(tmp_path):
    cert = _load(self_signed_certificate(tmp_path)[0])
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


@pytest.mark.parametrize("ca", [False, True])
def test_a_client_trusting_the_certificate_verifies_the_handshake(tmp_path, ca):
    cert_path, key_path = self_signed_certificate(tmp_path, ca=ca)
    server_context = tls_server_context(cert_path, key_path)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with server_context.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        client = ssl.create_default_context(cafile=str(cert_path))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with client.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.recv(2) == b"ok"
    finally:
        thread.join(10)
        listener.close()
