"""Finding the Java runtime and the Apache ZooKeeper jars that the managed ZooKeeper runs on.

Two layouts are supported:

- ``ZOOKEEPER_HOME`` set: an Apache ZooKeeper distribution (``$ZOOKEEPER_HOME/lib/*.jar``,
  ``$ZOOKEEPER_HOME/*.jar`` and ``$ZOOKEEPER_HOME/conf`` for its logback/log4j configuration).
  An explicit choice wins, so a broken ``ZOOKEEPER_HOME`` is an error, not a fallback.
- otherwise Debian's ``zookeeper`` package: ``/usr/share/java/zookeeper.jar``, whose manifest
  carries the rest of the classpath.

Java is ``$JAVA_HOME/bin/java`` when that exists, else ``java`` on ``PATH``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from steward.errors import EnvironmentMissingError

logger = logging.getLogger(__name__)

INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless zookeeper"
DEBIAN_ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# Debian's jar names no SLF4J binding; slf4j-simple (same package family) makes the server log
# to stderr, i.e. into zookeeper.log, which is what a failed start shows the user.
DEBIAN_SLF4J_BINDING = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

# Small heap and the serial collector: a test run starts several servers on one machine.
JVM_OPTIONS: tuple[str, ...] = (
    "-Xms32m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.jmx.log4j.disable=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
)

_SERVER_JAR = re.compile(r"^zookeeper(-\d[\w.-]*)?\.jar$")


@dataclass(frozen=True)
class ZooKeeperInstall:
    """A Java runtime and the classpath of one ZooKeeper installation."""

    java: Path
    classpath: tuple[str, ...]

    def server_command(self, config: Path) -> list[str]:
        """The command line that runs one ZooKeeper server from ``config`` (a zoo.cfg)."""
        return [
            str(self.java),
            *JVM_OPTIONS,
            "-cp",
            os.pathsep.join(self.classpath),
            MAIN_CLASS,
            str(config),
        ]


def locate_install(environ: Mapping[str, str] | None = None) -> ZooKeeperInstall:
    """Find Java and ZooKeeper, or raise ``EnvironmentMissingError`` naming the fix."""
    env = os.environ if environ is None else environ
    return ZooKeeperInstall(java=locate_java(env), classpath=locate_classpath(env))


def locate_java(env: Mapping[str, str]) -> Path:
    """``$JAVA_HOME/bin/java`` if it exists, else ``java`` on ``PATH``."""
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return candidate
        logger.warning("JAVA_HOME has no bin/java, trying PATH java_home=%s", java_home)
    found = shutil.which("java", path=env.get("PATH", os.defpath))
    if found is None:
        raise EnvironmentMissingError(
            f"Java not found (no java on PATH, no JAVA_HOME/bin/java); install it: {INSTALL_HINT}"
        )
    return Path(found)


def locate_classpath(env: Mapping[str, str]) -> tuple[str, ...]:
    """The ZooKeeper server classpath from ``ZOOKEEPER_HOME`` or Debian's package."""
    home = env.get("ZOOKEEPER_HOME")
    if home:
        return _distribution_classpath(Path(home))
    if DEBIAN_ZOOKEEPER_JAR.is_file():
        extra = (str(DEBIAN_SLF4J_BINDING),) if DEBIAN_SLF4J_BINDING.is_file() else ()
        return (str(DEBIAN_ZOOKEEPER_JAR), *extra)
    raise EnvironmentMissingError(
        f"ZooKeeper not found (no {DEBIAN_ZOOKEEPER_JAR}, ZOOKEEPER_HOME unset); "
        f"install it: {INSTALL_HINT} (or set ZOOKEEPER_HOME to an Apache ZooKeeper distribution)"
    )


def _distribution_classpath(home: Path) -> tuple[str, ...]:
    jars = sorted(home.glob("*.jar")) + sorted((home / "lib").glob("*.jar"))
    if not any(_SERVER_JAR.match(jar.name) for jar in jars):
        raise EnvironmentMissingError(
            f"ZOOKEEPER_HOME={home} holds no zookeeper-<version>.jar (in it or in lib/); "
            f"point it at an Apache ZooKeeper distribution, or unset it and: {INSTALL_HINT}"
        )
    # conf/ first so the distribution's logback.xml / log4j.properties is found.
    return (str(home / "conf"), *(str(jar) for jar in jars))
