package dev.tessera.ssb;

import java.util.List;
import java.util.SplittableRandom;

/** The specification's value lists (nations and regions as TPC-H) and its text rules. */
final class SsbText {
  private SsbText() {}

  static final List<String> REGIONS = List.of("AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST");

  /** The 25 TPC-H nations, in key order. */
  static final List<String> NATIONS = List.of(
      "ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY",
      "INDIA", "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE",
      "PERU", "CHINA", "ROMANIA", "SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM",
      "UNITED STATES");

  /** The region index of each nation, as TPC-H's nation table. */
  private static final int[] NATION_REGION = {
      0, 1, 1, 1, 4, 0, 3, 3, 2, 2, 4, 4, 2, 4, 0, 0, 0, 1, 2, 3, 4, 2, 3, 3, 1};

  static final List<String> SEGMENTS =
      List.of("AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD");

  static final List<String> PRIORITIES =
      List.of("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW");

  static final List<String> SHIP_MODES =
      List.of("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB");

  /** TPC-H's part colours; p_name is two of them and p_color one. */
  static final List<String> COLORS = List.of(
      "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue",
      "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon", "chocolate", "coral",
      "cornflower", "cornsilk", "cream", "cyan", "dark", "deep", "dim", "dodger", "drab",
      "firebrick", "floral", "forest", "frosted", "gainsboro", "ghost", "goldenrod", "green",
      "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender", "lawn", "lemon",
      "light", "lime", "linen", "magenta", "maroon", "medium", "metallic", "midnight", "mint",
      "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid", "pale", "papaya",
      "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy", "royal",
      "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow",
      "spring", "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white",
      "yellow");

  private static final List<String> TYPE_SIZE =
      List.of("STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO");
  private static final List<String> TYPE_FINISH =
      List.of("ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED");
  private static final List<String> TYPE_METAL =
      List.of("TIN", "NICKEL", "BRASS", "STEEL", "COPPER");
  private static final List<String> CONTAINER_SIZE = List.of("SM", "LG", "MED", "JUMBO", "WRAP");
  private static final List<String> CONTAINER_KIND =
      List.of("CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM");

  private static final String ADDRESS_CHARS =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,. ";

  static String region(int nation) {
    return REGIONS.get(NATION_REGION[nation]);
  }

  /** The nation's name cut or padded to 9 characters, then a digit: 'UNITED KI1'. */
  static String city(int nation, int digit) {
    String name = NATIONS.get(nation);
    String prefix = name.length() >= 9 ? name.substring(0, 9) : String.format("%-9s", name);
    return prefix + digit;
  }

  /** TPC-H's phone numbers: country code 10 + nation, then three random groups. */
  static String phone(SplittableRandom random, int nation) {
    return String.format("%02d-%03d-%03d-%04d", 10 + nation, random.nextInt(100, 1000),
        random.nextInt(100, 1000), random.nextInt(1000, 10000));
  }

  /** dbgen's variable-length address: 10 to 25 random characters. */
  static String address(SplittableRandom random) {
    int length = random.nextInt(10, 26);
    char[] chars = new char[length];
    for (int i = 0; i < length; i++) {
      chars[i] = ADDRESS_CHARS.charAt(random.nextInt(ADDRESS_CHARS.length()));
    }
    return new String(chars);
  }

  /** A key as dbgen names rows: the prefix and the key in nine digits. */
  static String name(String prefix, long key) {
    return String.format("%s%09d", prefix, key);
  }

  static String partType(SplittableRandom random) {
    return pick(random, TYPE_SIZE) + " " + pick(random, TYPE_FINISH) + " "
        + pick(random, TYPE_METAL);
  }

  static String container(SplittableRandom random) {
    return pick(random, CONTAINER_SIZE) + " " + pick(random, CONTAINER_KIND);
  }

  static <T> T pick(SplittableRandom random, List<T> values) {
    return values.get(random.nextInt(values.size()));
  }
}
