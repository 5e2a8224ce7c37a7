// The wire pieces the server and the client share (JSON value, parser, writers and escapes,
// SHA-256 and its HMAC, base64url) live in NimbusWire, which imports no Foundation; every server
// target that imports NimbusSupport sees them as before.
@_exported import NimbusWire
