"""The signed-in person's own account over HTTP: profile, password, usage."""
