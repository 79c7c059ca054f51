"""Finding the Java runtime and the Apache ZooKeeper jars that the managed ZooKeeper runs on.

Three layouts, in this order:

- ``ZOOKEEPER_HOME`` set: an Apache ZooKeeper distribution (``$ZOOKEEPER_HOME/lib/*.jar``,
  ``$ZOOKEEPER_HOME/*.jar`` and ``$ZOOKEEPER_HOME/conf`` for its logback/log4j configuration).
  An explicit choice wins, so a broken ``ZOOKEEPER_HOME`` is an error, not a fallback.
- otherwise the jars of the ``pyspark`` package Steward depends on: Spark ships a current
  ZooKeeper (``pyspark/jars/zookeeper-3.9.5.jar`` with pyspark 4.1) and what its server needs
  (jute, netty, SLF4J, Log4j 2), so nothing else is installed; its Log4j 2 logs to stderr
  (the server's ``zookeeper.log``) through :data:`LOG4J2_CONFIG`.
- otherwise Debian's ``zookeeper`` package: ``/usr/share/java/zookeeper.jar``, whose manifest
  carries the rest of the classpath. Debian's is 3.8.0, which has known data-loss bugs (fixed
  in 3.8.4); ``steward doctor`` says so.

Java is ``$JAVA_HOME/bin/java`` when that exists, else ``java`` on ``PATH``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from steward.errors import EnvironmentMissingError

logger = logging.getLogger(__name__)

INSTALL_HINT = "apt-get install -y openjdk-17-jre-headless"
ZOOKEEPER_HINT = "pip install pyspark (it ships ZooKeeper's jars)"
DEBIAN_ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
# Debian's jar names no SLF4J binding; slf4j-simple (same package family) makes the server log
# to stderr, i.e. into zookeeper.log, which is what a failed start shows the user.
DEBIAN_SLF4J_BINDING = Path("/usr/share/java/slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
SERVER_JVMFLAGS = "SERVER_JVMFLAGS"
"""The environment variable of extra server JVM options, as ZooKeeper's zkServer.sh reads it."""

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
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Log4j 2's configuration for a server on pyspark's jars: INFO and above to stderr."""
# What a ZooKeeper server needs of pyspark's jars (the rest is Spark's).
_PYSPARK_JARS = (
    "zookeeper-[0-9]*.jar",
    "zookeeper-jute-*.jar",
    "netty-buffer-*.jar",
    "netty-codec-[0-9]*.jar",
    "netty-codec-base-*.jar",
    "netty-common-*.jar",
    "netty-handler-[0-9]*.jar",
    "netty-resolver-[0-9]*.jar",
    "netty-transport-[0-9]*.jar",
    "netty-transport-classes-epoll-*.jar",
    "netty-transport-native-unix-common-*.jar",
    "slf4j-api-*.jar",
    "log4j-api-*.jar",
    "log4j-core-*.jar",
    "log4j-slf4j2-impl-*.jar",
    "audience-annotations-*.jar",
    "commons-cli-*.jar",
    "metrics-core-*.jar",
    "snappy-java-*.jar",
)


@dataclass(frozen=True)
class ZooKeeperInstall:
    """A Java runtime and the classpath of one ZooKeeper installation."""

    java: Path
    classpath: tuple[str, ...]
    jvm_options: tuple[str, ...] = ()
    """Options of this installation's own (its logging's configuration, then
    ``$SERVER_JVMFLAGS``)."""

    def server_command(self, config: Path) -> list[str]:
        """The command line that runs one ZooKeeper server from ``config`` (a zoo.cfg)."""
        return [
            str(self.java),
            *JVM_OPTIONS,
            *self.jvm_options,
            "-cp",
            os.pathsep.join(self.classpath),
            MAIN_CLASS,
            str(config),
        ]


def locate_install(environ: Mapping[str, str] | None = None) -> ZooKeeperInstall:
    """Find Java and ZooKeeper, or raise ``EnvironmentMissingError`` naming the fix."""
    env = os.environ if environ is None else environ
    classpath = locate_classpath(env)
    log4j2 = any(Path(entry).name.startswith("log4j-core-") for entry in classpath)
    options: tuple[str, ...] = (f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",) if log4j2 else ()
    # What ZooKeeper's own zkServer.sh adds to a server's JVM, honoured the same way.
    options += tuple(shlex.split(env.get(SERVER_JVMFLAGS, "")))
    return ZooKeeperInstall(java=locate_java(env), classpath=classpath, jvm_options=options)


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
    """The ZooKeeper server classpath: ``ZOOKEEPER_HOME``, pyspark's jars, or Debian's."""
    home = env.get("ZOOKEEPER_HOME")
    if home:
        return _distribution_classpath(Path(home))
    pyspark = pyspark_classpath()
    if pyspark is not None:
        return pyspark
    if DEBIAN_ZOOKEEPER_JAR.is_file():
        extra = (str(DEBIAN_SLF4J_BINDING),) if DEBIAN_SLF4J_BINDING.is_file() else ()
        return (str(DEBIAN_ZOOKEEPER_JAR), *extra)
    raise EnvironmentMissingError(
        "ZooKeeper not found (no zookeeper-<version>.jar in pyspark's jars, ZOOKEEPER_HOME"
        f" unset); {ZOOKEEPER_HINT}, or set ZOOKEEPER_HOME to an Apache ZooKeeper distribution"
    )


def pyspark_classpath() -> tuple[str, ...] | None:
    """The ZooKeeper server's jars among the installed pyspark's, or None (no pyspark, or one
    without ZooKeeper). pyspark is found, not imported (importing it costs a second)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    found = [jar for pattern in _PYSPARK_JARS for jar in sorted(jars.glob(pattern))]
    if not any(_SERVER_JAR.match(jar.name) for jar in found):
        return None
    return tuple(str(jar) for jar in found)


def _distribution_classpath(home: Path) -> tuple[str, ...]:
    jars = sorted(home.glob("*.jar")) + sorted((home / "lib").glob("*.jar"))
    if not any(_SERVER_JAR.match(jar.name) for jar in jars):
        raise EnvironmentMissingError(
            f"ZOOKEEPER_HOME={home} holds no zookeeper-<version>.jar (in it or in lib/); "
            "point it at an Apache ZooKeeper distribution, or unset it (pyspark's ZooKeeper is"
            f" used): {ZOOKEEPER_HINT}"
        )
    # conf/ first so the distribution's logback.xml / log4j.properties is found.
    return (str(home / "conf"), *(str(jar) for jar in jars))
