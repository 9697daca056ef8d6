SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (contains(granules, 'MOD09GQ.A5039420.mQk0tM.006.9370766211793') OR (granules IS NULL AND strpos(body, 'MOD09GQ.A5039420.mQk0tM.006.9370766211793') > 0))
ORDER BY eventdate, "$path"
