"""Stand-ins a deployment or a test can run: the stub token engine."""
