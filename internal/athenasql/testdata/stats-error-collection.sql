SELECT error AS value, count(*) AS objects
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (starts_with(collectionid, 'MOD09GQ___') OR (collectionid IS NULL AND strpos(body, 'MOD09GQ') > 0))
GROUP BY error
ORDER BY error
