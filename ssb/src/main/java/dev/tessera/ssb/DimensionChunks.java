package dev.tessera.ssb;

import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/** The customer, supplier and part tables, one row per key. */
final class DimensionChunks {
  private DimensionChunks() {}

  static final int ROWS_PER_CHUNK = 20_000;

  static final class Customers extends TableChunks {
    private static final long serialVersionUID = 1L;

    Customers(long seed, long rows) {
      super("customer", seed, rows, ROWS_PER_CHUNK);
    }

    @Override
    StructType schema() {
      return SsbSchemas.CUSTOMER;
    }

    @Override
    void addRows(int key, SplittableRandom random, List<Row> rows) {
      int nation = random.nextInt(SsbText.NATIONS.size());
      rows.add(RowFactory.create(key, SsbText.name("Customer#", key), SsbText.address(random),
          SsbText.city(nation, random.nextInt(10)), SsbText.NATIONS.get(nation),
          SsbText.region(nation), SsbText.phone(random, nation),
          SsbText.pick(random, SsbText.SEGMENTS)));
    }
  }

  static final class Suppliers extends TableChunks {
    private static final long serialVersionUID = 1L;

    Suppliers(long seed, long rows) {
      super("supplier", seed, rows, ROWS_PER_CHUNK);
    }

    @Override
    StructType schema() {
      return SsbSchemas.SUPPLIER;
    }

    @Override
    void addRows(int key, SplittableRandom random, List<Row> rows) {
      int nation = random.nextInt(SsbText.NATIONS.size());
      rows.add(RowFactory.create(key, SsbText.name("Supplier#", key), SsbText.address(random),
          SsbText.city(nation, random.nextInt(10)), SsbText.NATIONS.get(nation),
          SsbText.region(nation), SsbText.phone(random, nation)));
    }
  }

  static final class Parts extends TableChunks {
    private static final long serialVersionUID = 1L;

    Parts(long seed, long rows) {
      super("part", seed, rows, ROWS_PER_CHUNK);
    }

    @Override
    StructType schema() {
      return SsbSchemas.PART;
    }

    /** MFGR#m, category MFGR#mc, brand MFGR#mcb with m, c in 1..5 and b in 1..40. */
    @Override
    void addRows(int key, SplittableRandom random, List<Row> rows) {
      int mfgr = random.nextInt(1, 6);
      String category = "MFGR#" + mfgr + random.nextInt(1, 6);
      String name = SsbText.pick(random, SsbText.COLORS) + " "
          + SsbText.pick(random, SsbText.COLORS);
      rows.add(RowFactory.create(key, name, "MFGR#" + mfgr, category,
          category + random.nextInt(1, 41), SsbText.pick(random, SsbText.COLORS),
          SsbText.partType(random), random.nextInt(1, 51), SsbText.container(random)));
    }
  }
}
