"""`pm` (package manager) and `dumpsys package`: list, path, clear, grant, version info."""

from __future__ import annotations

from device_farm.virtual.os.app import App
from device_farm.virtual.shell.session import CommandContext


def apk_path(app: App) -> str:
    where = "product/app" if app.SYSTEM_APP else "data/app"
    return f"/{where}/{app.package.rsplit('.', 1)[-1].capitalize()}/base.apk"


def pm(ctx: CommandContext, args: list[str]) -> int:
    if not args:
        ctx.err("Package manager (package) commands:\n  list packages [-f] [-3] [-s] [FILTER]\n")
        return 1
    verb, rest = args[0], args[1:]
    apps = ctx.system.apps
    if verb == "list" and rest[:1] == ["packages"]:
        flags = {a for a in rest[1:] if a.startswith("-")}
        words = [a for a in rest[1:] if not a.startswith("-") and a != "0"]
        for app in apps.values():
            if "-3" in flags and app.SYSTEM_APP or "-s" in flags and not app.SYSTEM_APP:
                continue
            if words and words[0] not in app.package:
                continue
            prefix = f"{apk_path(app)}=" if "-f" in flags else ""
            ctx.out(f"package:{prefix}{app.package}\n")
        return 0
    if verb == "path":
        app = apps.get(rest[-1] if rest else "")
        if app is None:
            return 1
        ctx.out(f"package:{apk_path(app)}\n")
        return 0
    if verb == "clear":
        app = apps.get(rest[-1] if rest else "")
        if app is None:
            ctx.out("Failed\n")
            return 1
        ctx.system.force_stop(app.package)
        app.clear_data()
        ctx.out("Success\n")
        return 0
    if verb in ("grant", "revoke") and len(rest) >= 2:
        app = apps.get(rest[-2])
        if app is None:
            ctx.err(f"Exception occurred while executing '{verb}':\n"
                    f"java.lang.IllegalArgumentException: Unknown package: {rest[-2]}\n")
            return 255
        granted = ctx.system.granted.setdefault(app.package, set())
        (granted.add if verb == "grant" else granted.discard)(rest[-1])
        return 0
    if verb in ("enable", "disable", "disable-user", "set-permission-flags"):
        return 0
    if verb == "install":
        ctx.out("Failure [INSTALL_FAILED_INVALID_APK: virtual device cannot install packages]\n")
        return 1
    if verb == "uninstall":
        ctx.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
        return 1
    ctx.err(f"Unknown command: {verb}\n")
    return 255


def dumpsys_package(ctx: CommandContext, package: str) -> int:
    app = ctx.system.apps.get(package)
    if app is None:
        ctx.out(f"Unable to find package: {package}\n")
        return 0
    ctx.out(
        "Packages:\n"
        f"  Package [{app.package}] ({id(app) & 0xFFFFFFF:x}):\n"
        f"    codePath={apk_path(app).rsplit('/', 1)[0]}\n"
        f"    versionCode={app.VERSION_CODE} minSdk=26 targetSdk=34\n"
        f"    versionName={app.VERSION_NAME}\n"
        f"    flags=[ {'SYSTEM ' if app.SYSTEM_APP else ''}HAS_CODE ALLOW_CLEAR_USER_DATA ]\n"
        "    firstInstallTime=2024-01-01 00:00:00\n"
        "    lastUpdateTime=2024-01-01 00:00:00\n"
    )
    granted = sorted(ctx.system.granted.get(package, ()))
    if granted:
        ctx.out("    runtime permissions:\n"
                + "".join(f"      {name}: granted=true, flags=[ USER_SET ]\n" for name in granted))
    return 0
