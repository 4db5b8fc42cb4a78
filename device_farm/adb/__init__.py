"""Phones over adb: the host protocol client, the device (shell, files, uiautomator2 RPC), adb servers and the pool source that lists them."""
