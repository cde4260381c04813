package dev.tessera.ssb;

import static org.apache.spark.sql.types.DataTypes.IntegerType;
import static org.apache.spark.sql.types.DataTypes.StringType;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The five tables' schemas with the specification's column names. Keys, yyyymmdd dates,
 * quantities, prices and flags are INT (their sums are LONG); text is STRING. No column is
 * nullable: the generator writes every value.
 */
final class SsbSchemas {
  private SsbSchemas() {}

  static final StructType LINEORDER = schema(
      "lo_orderkey", IntegerType, "lo_linenumber", IntegerType, "lo_custkey", IntegerType,
      "lo_partkey", IntegerType, "lo_suppkey", IntegerType, "lo_orderdate", IntegerType,
      "lo_orderpriority", StringType, "lo_shippriority", StringType, "lo_quantity", IntegerType,
      "lo_extendedprice", IntegerType, "lo_ordtotalprice", IntegerType, "lo_discount", IntegerType,
      "lo_revenue", IntegerType, "lo_supplycost", IntegerType, "lo_tax", IntegerType,
      "lo_commitdate", IntegerType, "lo_shipmode", StringType);

  static final StructType CUSTOMER = schema(
      "c_custkey", IntegerType, "c_name", StringType, "c_address", StringType,
      "c_city", StringType, "c_nation", StringType, "c_region", StringType,
      "c_phone", StringType, "c_mktsegment", StringType);

  static final StructType SUPPLIER = schema(
      "s_suppkey", IntegerType, "s_name", StringType, "s_address", StringType,
      "s_city", StringType, "s_nation", StringType, "s_region", StringType,
      "s_phone", StringType);

  static final StructType PART = schema(
      "p_partkey", IntegerType, "p_name", StringType, "p_mfgr", StringType,
      "p_category", StringType, "p_brand1", StringType, "p_color", StringType,
      "p_type", StringType, "p_size", IntegerType, "p_container", StringType);

  static final StructType DATE = schema(
      "d_datekey", IntegerType, "d_date", StringType, "d_dayofweek", StringType,
      "d_month", StringType, "d_year", IntegerType, "d_yearmonthnum", IntegerType,
      "d_yearmonth", StringType, "d_daynuminweek", IntegerType, "d_daynuminmonth", IntegerType,
      "d_daynuminyear", IntegerType, "d_monthnuminyear", IntegerType,
      "d_weeknuminyear", IntegerType, "d_sellingseason", StringType,
      "d_lastdayinweekfl", IntegerType, "d_lastdayinmonthfl", IntegerType,
      "d_holidayfl", IntegerType, "d_weekdayfl", IntegerType);

  /** Alternating names and types. */
  private static StructType schema(Object... namesAndTypes) {
    StructField[] fields = new StructField[namesAndTypes.length / 2];
    for (int i = 0; i < fields.length; i++) {
      fields[i] = new StructField((String) namesAndTypes[2 * i],
          (DataType) namesAndTypes[2 * i + 1], false, Metadata.empty());
    }
    return new StructType(fields);
  }
}
