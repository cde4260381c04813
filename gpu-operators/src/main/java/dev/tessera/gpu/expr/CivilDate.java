package dev.tessera.gpu.expr;

/** Days since 1970-01-01 to proleptic Gregorian year, month, day (H. Hinnant's civil_from_days). */
final class CivilDate {
  private CivilDate() {}

  static int[] fromEpochDays(long days) {
    long z = days + 719468;
    long era = (z >= 0 ? z : z - 146096) / 146097;
    long doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long y = yoe + era * 400;
    long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153;
    long d = doy - (153 * mp + 2) / 5 + 1;
    long m = mp < 10 ? mp + 3 : mp - 9;
    return new int[] {(int) (m <= 2 ? y + 1 : y), (int) m, (int) d};
  }
}
