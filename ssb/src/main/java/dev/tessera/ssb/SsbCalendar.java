package dev.tessera.ssb;

import java.time.DayOfWeek;
import java.time.LocalDate;
import java.time.Month;
import java.time.format.TextStyle;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * The date dimension: one row a day from 1992-01-01, 2,556 days as the specification and
 * ssb-dbgen give it (so it ends on 1998-12-30). Orders fall in its first days as in TPC-H
 * (to 1998-08-02) and commit dates up to 90 days later, so every date key lineorder holds is
 * in the table.
 */
final class SsbCalendar {
  private SsbCalendar() {}

  static final LocalDate FIRST = LocalDate.of(1992, 1, 1);
  static final int DAYS = 2556;
  /** Order dates: 1992-01-01 to 1998-08-02, TPC-H's range (its end date less 151 days). */
  static final int ORDER_DAYS =
      (int) (LocalDate.of(1998, 8, 2).toEpochDay() - FIRST.toEpochDay()) + 1;
  static final int MAX_COMMIT_DELAY = 90;

  /** yyyymmdd of each day index, so lineorder looks keys up without calendar arithmetic. */
  private static final int[] KEYS = keys();

  static int key(int dayIndex) {
    return KEYS[dayIndex];
  }

  private static int[] keys() {
    int[] keys = new int[DAYS];
    for (int i = 0; i < DAYS; i++) {
      keys[i] = key(FIRST.plusDays(i));
    }
    return keys;
  }

  static int key(LocalDate day) {
    return day.getYear() * 10000 + day.getMonthValue() * 100 + day.getDayOfMonth();
  }

  static List<Row> rows() {
    List<Row> rows = new ArrayList<>(DAYS);
    for (int i = 0; i < DAYS; i++) {
      rows.add(row(FIRST.plusDays(i)));
    }
    return rows;
  }

  private static Row row(LocalDate day) {
    String month = day.getMonth().getDisplayName(TextStyle.FULL, Locale.US);
    String weekday = day.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.US);
    // Sunday is day 1 of the week, as in dbgen.
    int dayInWeek = day.getDayOfWeek().getValue() % 7 + 1;
    boolean weekday5 = day.getDayOfWeek() != DayOfWeek.SATURDAY
        && day.getDayOfWeek() != DayOfWeek.SUNDAY;
    return RowFactory.create(
        key(day),
        month + " " + day.getDayOfMonth() + ", " + day.getYear(),
        weekday,
        month,
        day.getYear(),
        day.getYear() * 100 + day.getMonthValue(),
        month.substring(0, 3) + day.getYear(),
        dayInWeek,
        day.getDayOfMonth(),
        day.getDayOfYear(),
        day.getMonthValue(),
        (day.getDayOfYear() - 1) / 7 + 1,
        season(day),
        flag(day.getDayOfWeek() == DayOfWeek.SATURDAY),
        flag(day.getDayOfMonth() == day.lengthOfMonth()),
        flag(holiday(day)),
        flag(weekday5));
  }

  private static int flag(boolean value) {
    return value ? 1 : 0;
  }

  /** dbgen's selling seasons: Christmas is December, Summer June to August, and so on. */
  static String season(LocalDate day) {
    return switch (day.getMonth()) {
      case DECEMBER -> "Christmas";
      case JANUARY, FEBRUARY -> "Winter";
      case MARCH, APRIL, MAY -> "Spring";
      case JUNE, JULY, AUGUST -> "Summer";
      default -> "Fall";
    };
  }

  /**
   * Fixed-date US holidays plus Thanksgiving (the fourth Thursday of November). The
   * specification leaves the list open; no standard query reads d_holidayfl.
   */
  static boolean holiday(LocalDate day) {
    int d = day.getDayOfMonth();
    Month m = day.getMonth();
    boolean fixed = (m == Month.JANUARY && d == 1) || (m == Month.JULY && d == 4)
        || (m == Month.NOVEMBER && d == 11)
        || (m == Month.DECEMBER && (d == 24 || d == 25 || d == 31));
    boolean thanksgiving = m == Month.NOVEMBER && day.getDayOfWeek() == DayOfWeek.THURSDAY
        && (d - 1) / 7 == 3;
    return fixed || thanksgiving;
  }
}
