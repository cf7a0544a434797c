# rota_write_if_changed(PATH CONTENT): writes PATH only when its text differs, so a generated
# file that did not change does not rebuild what includes it (for the cmake -P scripts).
function(rota_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()
