"""What the tests' OpenAI-compatible stand-in servers share: writing one response."""

from http.server import BaseHTTPRequestHandler


def send(handler: BaseHTTPRequestHandler, data: bytes, content_type: str = "application/json") -> None:
    """Answer `handler`'s request with status 200 and `data` (its length sent, so keep-alive clients can read it)."""
    handler.send_response(200)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
