"""What an adb stream opened on the virtual phone reaches: the service router (``shell:``,
``exec:``, ``sync:``, ``tcp:``, ``localabstract:``) and the shell and sync services."""
