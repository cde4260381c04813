package dev.tessera.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ConfEntryTest {
  @Test
  void bytesTakeBinaryUnitsAndPrintTheLargestExactOne() {
    ConfEntry<Long> entry = ConfEntry.key("spark.tessera.test.size").doc("a size")
        .bytesConf().createWithDefault(3L << 30);
    assertEquals("3g", entry.defaultText());
    assertEquals(1536L << 10, entry.parse("1536k"));
    assertEquals(1L << 40, entry.parse("1TB"));
    assertEquals(100L, entry.parse("100"));
    assertEquals(100L, entry.parse("100b"));
    assertThrows(IllegalArgumentException.class, () -> entry.parse("1.5g"));
    assertThrows(IllegalArgumentException.class, () -> entry.parse("9999999999999t"));
  }

  @Test
  void definitionsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> ConfEntry.key("spark.other.key"));
    assertThrows(IllegalStateException.class,
        () -> ConfEntry.key("spark.tessera.test.undocumented").booleanConf());
    assertThrows(IllegalStateException.class,
        () -> ConfEntry.key("spark.tessera.test.bad").doc("d").bytesConf()
            .check(v -> v > 0, "greater than 0").createWithDefault(0L));
  }

  @Test
  void acceptedValuesListRequirements() {
    assertEquals("true, false", TesseraConf.ENABLED.acceptedValues());
    assertEquals("NONE, NOT_ON_GPU, ALL (any case)", TesseraConf.EXPLAIN.acceptedValues());
    assertEquals(
        "a whole number of bytes, optionally with a binary unit k, m, g or t"
            + " (128m = 134217728); must be greater than 0",
        TesseraConf.BATCH_SIZE_BYTES.acceptedValues());
  }
}
