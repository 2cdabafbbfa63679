# kolo_auto_switch(NAME): checks that the cache variable NAME (a switch declared AUTO, ON or
# OFF in CMakeLists.txt) holds one of those, for the dependencies found only when wanted:
# KOLO_CUDA, KOLO_ONEDNN, KOLO_GLOO. AUTO uses the library when it is found; ON fails without it.
function(kolo_auto_switch name)
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  if(NOT ${name} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name}='${${name}}': expected AUTO, ON or OFF")
  endif()
endfunction()
