"""The uiautomator2 server on the virtual phone: its JSON-RPC dispatcher and the methods the
real server answers (hierarchy, selectors, clicks, text, screenshots)."""
