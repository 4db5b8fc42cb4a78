"""The device side of the adb wire protocol: packets, flow-controlled streams, AUTH and the
connection server. It knows no service: what a stream reaches is decided by the router the
phone gives it (``services``), so this package sits below the system."""
