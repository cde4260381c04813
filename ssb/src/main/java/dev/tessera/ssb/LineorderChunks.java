package dev.tessera.ssb;

import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;

/**
 * The fact table: orders of 1 to 7 lines, each line a part, a supplier and a customer drawn
 * uniformly from the dimension tables, so every foreign key has its row. Prices are in cents,
 * as ssb-dbgen writes them.
 */
final class LineorderChunks extends TableChunks {
  private static final long serialVersionUID = 1L;

  static final int ORDERS_PER_CHUNK = 5_000;
  private static final int MAX_LINES = 7;

  private final int customers;
  private final int suppliers;
  private final int parts;

  LineorderChunks(long seed, SsbScale scale) {
    super("lineorder", seed, scale.orders(), ORDERS_PER_CHUNK);
    this.customers = (int) scale.customers();
    this.suppliers = (int) scale.suppliers();
    this.parts = (int) scale.parts();
  }

  @Override
  StructType schema() {
    return SsbSchemas.LINEORDER;
  }

  /** TPC-H's part retail price in cents: 900.00 to about 2,099.00, fixed by the key. */
  static int retailPrice(int partKey) {
    return 90_000 + (partKey / 10) % 20_001 + 100 * (partKey % 1_000);
  }

  @Override
  void addRows(int orderKey, SplittableRandom random, List<Row> rows) {
    int lines = random.nextInt(1, MAX_LINES + 1);
    int custKey = random.nextInt(1, customers + 1);
    int orderDay = random.nextInt(SsbCalendar.ORDER_DAYS);
    String priority = SsbText.pick(random, SsbText.PRIORITIES);
    int[][] line = new int[lines][];
    long total = 0;
    for (int i = 0; i < lines; i++) {
      int partKey = random.nextInt(1, parts + 1);
      int suppKey = random.nextInt(1, suppliers + 1);
      int quantity = random.nextInt(1, 51);
      int discount = random.nextInt(0, 11);
      int tax = random.nextInt(0, 9);
      int commitDay = orderDay + random.nextInt(30, SsbCalendar.MAX_COMMIT_DELAY + 1);
      int price = retailPrice(partKey);
      int extended = quantity * price;
      int revenue = (int) ((long) extended * (100 - discount) / 100);
      // dbgen's supply cost: 60% of the retail price.
      int supplyCost = 6 * price / 10;
      total += (long) revenue * (100 + tax) / 100;
      line[i] = new int[] {partKey, suppKey, quantity, extended, discount, revenue, supplyCost,
          tax, commitDay, random.nextInt(SsbText.SHIP_MODES.size())};
    }
    int orderDate = SsbCalendar.key(orderDay);
    for (int i = 0; i < lines; i++) {
      int[] l = line[i];
      rows.add(RowFactory.create(orderKey, i + 1, custKey, l[0], l[1], orderDate, priority, "0",
          l[2], l[3], (int) total, l[4], l[5], l[6], l[7], SsbCalendar.key(l[8]),
          SsbText.SHIP_MODES.get(l[9])));
    }
  }
}
