# numacoll-topo: the paper's Fig. 3 planned on a synthetic topology, printed as JSON.
add_test(NAME topo_tool_fig3_json
         COMMAND $<TARGET_FILE:numacoll-topo> --synthetic "pack:2 numa:2 l3:1 core:32 pu:1"
                 --procs 14 --map-by numa --levels numa,socket --json)
set_tests_properties(topo_tool_fig3_json PROPERTIES
  ENVIRONMENT "NUMACOLL_TOPO_SYNTHETIC=;NUMACOLL_TOPO_MAP_BY=core"
  PASS_REGULAR_EXPRESSION
  "^\\{\"levels\": \\[\\{\"name\": \"numa\", \"groups\": \\[\\[0,4,8,12\\], \\[1,5,9,13\\], \\[2,6,10\\], \\[3,7,11\\]\\]\\}, \\{\"name\": \"socket\", \"groups\": \\[\\[0,1\\], \\[2,3\\]\\]\\}, \\{\"name\": \"top\", \"groups\": \\[\\[0,2\\]\\]\\}\\]\\}\n$")

# Fig. 2 in the readable form (default levels = NUMACOLL_BARRIER_TOPO_LEVELS = numa,socket)
add_test(NAME topo_tool_fig2_text
         COMMAND $<TARGET_FILE:numacoll-topo> --synthetic "pack:2 numa:2 l3:1 core:32 pu:1"
                 --procs 128 --map-by core)
set_tests_properties(topo_tool_fig2_text PROPERTIES
  PASS_REGULAR_EXPRESSION
  "G1 numa +4 groups: \\{0\\.\\.31\\} \\{32\\.\\.63\\} \\{64\\.\\.95\\} \\{96\\.\\.127\\}\nG2 socket 2 groups: \\{0,32\\} \\{64,96\\}\nG3 top +1 group: \\{0,64\\}\n")

# bad arguments: a message naming the allowed values and exit status 2
add_test(NAME topo_tool_bad_args
         COMMAND sh -c "\"$0\" --map-by board 2>&1; test $? -eq 2 && echo EXIT2"
                 $<TARGET_FILE:numacoll-topo>)
set_tests_properties(topo_tool_bad_args PROPERTIES
  PASS_REGULAR_EXPRESSION "allowed: core, numa, socket.*EXIT2")
add_test(NAME topo_tool_bad_synthetic
         COMMAND sh -c "\"$0\" --synthetic 'pack:2 widget:3' --procs 4 2>&1; test $? -eq 2 && echo EXIT2"
                 $<TARGET_FILE:numacoll-topo>)
set_tests_properties(topo_tool_bad_synthetic PROPERTIES
  PASS_REGULAR_EXPRESSION "not a valid hwloc synthetic topology.*pack:2 numa:2.*EXIT2")
