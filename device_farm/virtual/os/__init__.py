"""The virtual phone's Android system: the framework's ``App`` and ``Activity`` base classes,
packages, the activity stack, intents, content providers, settings, the file system, dialogs,
notifications and the screen's input dispatch. It draws with ``ui`` and never imports an app:
apps are handed in as factories."""
