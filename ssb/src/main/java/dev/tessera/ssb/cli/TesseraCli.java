package dev.tessera.ssb.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The Java side of {@code bin/tessera}: its {@code ssb}, {@code sql} and {@code compression}
 * commands. ({@code diagnose} and {@code configs} are main classes of their own modules, which
 * the launcher runs directly.) Run from {@link #main}, the commands log quietly unless {@code
 * --verbose} is given (see {@link CliLogging}).
 */
@Command(name = "tessera", mixinStandardHelpOptions = true,
    description = "Spark SQL on NVIDIA GPUs: the SSB benchmark, ad-hoc SQL and the cache's"
        + " compression of the SSB tables.",
    subcommands = {SsbCommand.class, SqlCommand.class, CompressionCommand.class})
public final class TesseraCli implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    System.setProperty("java.awt.headless", "true");
    CommandLine cli = commandLine();
    cli.setExecutionStrategy(parsed -> {
      // Once the arguments are parsed and before the command runs: nothing has started log4j yet.
      CliLogging.configure(verbose(parsed));
      return new CommandLine.RunLast().execute(parsed);
    });
    System.exit(cli.execute(args));
  }

  /** Whether the command the arguments name was given {@code --verbose}. */
  static boolean verbose(CommandLine.ParseResult parsed) {
    CommandLine.ParseResult last = parsed;
    while (last.hasSubcommand()) {
      last = last.subcommand();
    }
    return last.hasMatchedOption("--verbose");
  }

  /** The parser, with the subcommands' default factories. */
  public static CommandLine commandLine() {
    return new CommandLine(new TesseraCli());
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "name a command: ssb or sql to run queries, compression to measure the cache's format");
  }
}
