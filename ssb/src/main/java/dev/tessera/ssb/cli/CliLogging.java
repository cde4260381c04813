package dev.tessera.ssb.cli;

import java.net.URL;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import picocli.CommandLine.Option;

/**
 * The logging of {@code bin/tessera sql} and {@code ssb}: they print Tessera's explain report and
 * their results, not Spark's INFO log. Unless {@code --verbose} is given or the user names a log4j2
 * configuration of their own ({@code -Dlog4j2.configurationFile}, {@code -Dlog4j.configurationFile}
 * or {@code LOG4J_CONFIGURATION_FILE}), {@link TesseraCli#main} makes log4j2 load {@link
 * #QUIET_CONFIG}: errors only, except WARN and up from {@code dev.tessera} (the explain report is
 * logged at WARN by {@code dev.tessera.spark.ExplainLog}), plainly on stderr.
 *
 * <p>It does so by setting {@code log4j2.configurationFile} before the command runs, so before
 * anything starts log4j: the first logger created reads the property, and Spark, which finds a
 * configuration in place, keeps it instead of loading its own INFO profile.
 */
final class CliLogging {
  /** The quiet configuration: a resource under a name that nothing looks for by default. */
  static final String QUIET_CONFIG = "dev/tessera/ssb/cli/tessera-cli-log4j2.properties";

  /** The system property that names log4j2's configuration, the one this class sets. */
  static final String CONFIGURATION_PROPERTY = "log4j2.configurationFile";

  /** The system properties by which a user names a log4j2 configuration (the second is legacy). */
  static final List<String> USER_PROPERTIES =
      List.of(CONFIGURATION_PROPERTY, "log4j.configurationFile");

  /** The environment variable by which a user names a log4j2 configuration. */
  static final String USER_ENVIRONMENT = "LOG4J_CONFIGURATION_FILE";

  private CliLogging() {}

  /** The {@code --verbose} option of {@code sql} and {@code ssb}, a picocli mixin. */
  static final class VerboseOption {
    @Option(names = "--verbose",
        description = "log as Spark usually does (INFO and WARN lines on stderr) instead of only"
            + " errors and Tessera's warnings and explain report")
    boolean verbose;
  }

  /**
   * Why the quiet configuration is not applied, or empty when it is: {@code --verbose}, or the
   * user's own configuration (a blank value counts as none, as log4j2 takes it).
   */
  static Optional<String> whyNotQuiet(boolean verbose, Properties systemProperties,
      Map<String, String> environment) {
    if (verbose) {
      return Optional.of("--verbose");
    }
    for (String name : USER_PROPERTIES) {
      String value = systemProperties.getProperty(name);
      if (value != null && !value.isBlank()) {
        return Optional.of("-D" + name + "=" + value);
      }
    }
    String value = environment.get(USER_ENVIRONMENT);
    if (value != null && !value.isBlank()) {
      return Optional.of(USER_ENVIRONMENT + "=" + value);
    }
    return Optional.empty();
  }

  /** The quiet configuration's location on the class path. */
  static URL quietConfig() {
    URL url = CliLogging.class.getClassLoader().getResource(QUIET_CONFIG);
    if (url == null) {
      throw new IllegalStateException("the class path lacks " + QUIET_CONFIG);
    }
    return url;
  }

  /**
   * Points log4j2 at the quiet configuration, by setting {@link #CONFIGURATION_PROPERTY} in {@code
   * systemProperties}, unless {@link #whyNotQuiet} says otherwise; returns whether it did. Takes
   * effect only if log4j2 has not started yet.
   */
  static boolean configure(boolean verbose, Properties systemProperties,
      Map<String, String> environment) {
    if (whyNotQuiet(verbose, systemProperties, environment).isPresent()) {
      return false;
    }
    systemProperties.setProperty(CONFIGURATION_PROPERTY, quietConfig().toString());
    return true;
  }

  /** {@link #configure(boolean, Properties, Map)} on this JVM's properties and environment. */
  static boolean configure(boolean verbose) {
    return configure(verbose, System.getProperties(), System.getenv());
  }
}
