package dev.tessera.ssb.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The Java side of {@code bin/tessera}: its {@code ssb} and {@code sql} commands. ({@code
 * diagnose} and {@code configs} are main classes of their own modules, which the launcher runs
 * directly.)
 */
@Command(name = "tessera", mixinStandardHelpOptions = true,
    description = "Spark SQL on NVIDIA GPUs: the SSB benchmark and ad-hoc SQL.",
    subcommands = {SsbCommand.class, SqlCommand.class})
public final class TesseraCli implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.setProperty("java.awt.headless", "true");
    System.exit(commandLine().execute(args));
  }

  /** The parser, with the subcommands' default factories. */
  public static CommandLine commandLine() {
    return new CommandLine(new TesseraCli());
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "name a command: ssb or sql");
  }
}
