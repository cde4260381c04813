package dev.tessera.it

import dev.tessera.spark.ConfigDocs
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import org.scalatest.funsuite.AnyFunSuite

/** docs/configs.md is generated from the setting definitions; the committed page must match. */
class ConfigDocsSuite extends AnyFunSuite {
  test("docs/configs.md is what ConfigDocs generates") {
    val root = sys.props.get("tessera.repo.root")
    assume(root.isDefined, "tessera.repo.root is not set: not a source checkout (the Maven" +
      " build sets it)")
    val file = Paths.get(root.get, "docs", "configs.md")
    assert(Files.isRegularFile(file), s"$file is missing; generate it with: ${ConfigDocs.REGENERATE}")
    val committed = new String(Files.readAllBytes(file), UTF_8)
    val generated = ConfigDocs.markdown()
    if (committed != generated) {
      val firstDifference = committed.linesIterator.zipAll(generated.linesIterator, "", "")
        .zipWithIndex.collectFirst { case ((c, g), i) if c != g =>
          s"line ${i + 1}:\n  committed: $c\n  generated: $g"
        }.getOrElse("(line endings differ)")
      fail(s"docs/configs.md is out of date; regenerate it with: ${ConfigDocs.REGENERATE}\n" +
        s"First difference, $firstDifference")
    }
  }
}
