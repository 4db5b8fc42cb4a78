"""What the virtual phone draws: view trees and their uiautomator XML, the widget constructors
apps use, the system windows (dialogs, notification shade), the renderer and the selector
matcher. The bottom of the phone: it imports nothing else of it, so both the system (``os``)
and the apps build on it."""
