"""Faults on the virtual phone: seeded plans of what goes wrong and when (``plan``), and the
injector that makes it happen on the transport, the uiautomator2 server and the system."""
